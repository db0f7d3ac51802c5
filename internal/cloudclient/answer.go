package cloudclient

import (
	"context"
	"reflect"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
)

// answered wraps fn so that a nil result without an error (an adapter's bug) becomes an
// ErrTransient error of op, never a nil that the layers above would dereference.
// ErrTransient, because nothing is known of the outcome: a create may have been made, a
// resource read may exist; the layers above treat it as they treat a lost answer.
func answered[T any](op cloudapi.Operation, fn func(context.Context) (T, error)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		res, err := fn(ctx)
		if err == nil && nilPointer(res) {
			return res, paging.NoAnswer(op, "")
		}
		return res, err
	}
}

// nilPointer reports whether v is a nil pointer (of any pointer type).
func nilPointer[T any](v T) bool {
	rv := reflect.ValueOf(any(v))
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
