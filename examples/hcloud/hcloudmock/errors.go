package hcloudmock

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// The API's error codes the mock answers by itself (a Fault may name any other).
const (
	codeNotFound       = "not_found"
	codeLocked         = "locked"
	codeConflict       = "conflict"
	codeUniqueness     = "uniqueness_error"
	codeInvalidInput   = "invalid_input"
	codeJSONError      = "json_error"
	codeRateLimited    = "rate_limit_exceeded"
	codeUnauthorized   = "unauthorized"
	codeResourceLimit  = "resource_limit_exceeded"
	codeTargetDefined  = "target_already_defined"
	codePortUsed       = "source_port_already_used"
	codeLBAttached     = "load_balancer_already_attached"
	codeLBNotAttached  = "load_balancer_not_attached_to_network"
	codeServerNotOnNet = "server_not_attached_to_network"
	codeInvalidLBType  = "invalid_load_balancer_type"
	defaultErrorStatus = http.StatusUnprocessableEntity
)

// statusOf is the HTTP status of each error code the API documents with one. A code not
// listed (the resource-specific ones, a Fault's own) answers defaultErrorStatus: the SDK
// reads the code, not the status.
var statusOf = map[string]int{
	codeNotFound:              http.StatusNotFound,
	codeLocked:                http.StatusLocked,
	codeConflict:              http.StatusConflict,
	codeUniqueness:            http.StatusConflict,
	codeInvalidInput:          http.StatusBadRequest,
	codeJSONError:             http.StatusBadRequest,
	codeRateLimited:           http.StatusTooManyRequests,
	codeUnauthorized:          http.StatusUnauthorized,
	codeResourceLimit:         http.StatusForbidden,
	"forbidden":               http.StatusForbidden,
	"protected":               http.StatusForbidden,
	"resource_unavailable":    http.StatusForbidden,
	"maintenance":             http.StatusServiceUnavailable,
	"service_error":           http.StatusServiceUnavailable,
	"server_error":            http.StatusInternalServerError,
	"bad_gateway":             http.StatusBadGateway,
	"timeout":                 http.StatusGatewayTimeout,
	"unknown_error":           http.StatusInternalServerError,
	"deprecated_api_endpoint": http.StatusGone,
}

// apiError is an error answer of the API: {"error": {"code", "message", "details"}}.
type apiError struct {
	code, message string
	details       any
}

func errorf(code, format string, args ...any) *apiError {
	return &apiError{code: code, message: fmt.Sprintf(format, args...)}
}

func notFound(kind string, id any) *apiError {
	return errorf(codeNotFound, "%s with ID '%v' not found", kind, id)
}

// invalidField is invalid_input naming the field, with the details the SDK decodes into
// hcloud.ErrorDetailsInvalidInput.
func invalidField(field, format string, args ...any) *apiError {
	msg := fmt.Sprintf(format, args...)
	e := errorf(codeInvalidInput, "invalid input in field '%s'", field)
	e.details = map[string]any{"fields": []map[string]any{{"name": field, "messages": []string{msg}}}}
	return e
}

func (e *apiError) answer() (int, any) {
	status, ok := statusOf[e.code]
	if !ok {
		status = defaultErrorStatus
	}
	body := schema.ErrorResponse{Error: schema.Error{Code: e.code, Message: e.message}}
	if e.details != nil {
		body.Error.DetailsRaw, _ = json.Marshal(e.details) // maps and slices of strings
	}
	return status, body
}

// actionError is e as the error object of a failed action.
func (e *apiError) actionError() *schema.ActionError {
	return &schema.ActionError{Code: e.code, Message: e.message}
}

// Error is e as a Go error, for a seed the API would refuse: its code, its message and
// its details (the fields of invalid_input and what is wrong with each).
func (e *apiError) Error() string {
	if e.details == nil {
		return e.code + ": " + e.message
	}
	details, _ := json.Marshal(e.details) // maps and slices of strings
	return fmt.Sprintf("%s: %s %s", e.code, e.message, details)
}
