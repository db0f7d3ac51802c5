package cloudapi

import (
	"fmt"
	"strconv"
)

// PageNumber returns the page that token names in a list paged by page number (see the
// package doc, "Paging"): 1 for the empty token, the number of a token PageToken made
// otherwise. Any other token is ErrInvalidRequest for op.
func PageNumber(op Operation, token string) (int, error) {
	if token == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(token)
	if err != nil || n < 2 || strconv.Itoa(n) != token {
		return 0, NewError(ErrInvalidRequest, op, "", fmt.Errorf("page token %q is not a page number this adapter returned", token))
	}
	return n, nil
}

// PageToken returns the page token of page next after page, in a list paged by page
// number: empty when next does not follow page (the API's answer to the last page).
func PageToken(page, next int) string {
	if next <= page {
		return ""
	}
	return strconv.Itoa(next)
}

// PageRequest is what a list paged by page number asks the cloud for.
type PageRequest struct {
	// Page is the number of the page, 1 for the first.
	Page int
	// PerPage is the most items the page holds.
	PerPage int
	// Selector is the label selector of the list's tags (LabelSelector), empty for none.
	Selector string
}

// PageNumberRequest returns the request of a list with opts on a cloud that pages by page
// number (PageNumber) with at most maxPerPage items a page (opts.PageSize when it is
// positive and smaller) and filters by labels under rules (LabelSelector). A page token
// PageToken did not make, or tags the rules cannot carry, are ErrInvalidRequest for op.
func PageNumberRequest(op Operation, opts ListOptions, rules LabelRules, maxPerPage int) (PageRequest, error) {
	page, err := PageNumber(op, opts.PageToken)
	if err != nil {
		return PageRequest{}, err
	}
	selector, err := LabelSelector(opts.Tags, rules)
	if err != nil {
		return PageRequest{}, NewError(ErrInvalidRequest, op, "", err)
	}
	perPage := maxPerPage
	if opts.PageSize > 0 {
		perPage = min(opts.PageSize, maxPerPage)
	}
	return PageRequest{Page: page, PerPage: perPage, Selector: selector}, nil
}
