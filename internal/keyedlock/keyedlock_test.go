package keyedlock

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLocks(t *testing.T) {
	var locks Locks[string]
	t.Run("one key is serialized, and its mutex goes with its last user", func(t *testing.T) {
		var wg sync.WaitGroup
		held := 0
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer locks.Lock("a")()
				held++ // the race detector finds two holders at once
			}()
		}
		wg.Wait()
		assert.Equal(t, 50, held)
		assert.Empty(t, locks.locks)
	})
	t.Run("other keys do not wait", func(t *testing.T) {
		unlockA := locks.Lock("a")
		locks.Lock("b")()
		unlockA()
		assert.Empty(t, locks.locks)
	})
}
