package throttlenote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ccmkit/ccmkit/internal/throttlenote"
)

func TestRecordCountsIntoTheNoteOfItsContext(t *testing.T) {
	throttlenote.Record(context.Background()) // no note: nothing to count, no panic
	ctx, outer := throttlenote.With(context.Background())
	throttlenote.Record(ctx)
	inner, n := throttlenote.With(ctx)
	throttlenote.Record(inner)
	throttlenote.Record(inner)
	assert.Equal(t, int64(1), outer.Count())
	assert.Equal(t, int64(2), n.Count())
}
