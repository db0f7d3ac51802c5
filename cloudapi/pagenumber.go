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
