// Package keyedlock is a set of mutexes by key: Lock(k) serializes the callers of one
// key, callers of other keys run at once, and a key's mutex lives only while someone
// holds or waits for it. Each kind of thing locked gets a Locks of its own, so keys of
// different kinds never meet.
package keyedlock

import "sync"

// Locks holds the mutexes of the keys in use. The zero value is ready for use; it must
// not be copied after first use.
type Locks[K comparable] struct {
	mu    sync.Mutex
	locks map[K]*entry
}

type entry struct {
	sync.Mutex
	users int // holders and waiters
}

// Lock waits until no one else holds k's lock, takes it, and returns the function that
// releases it, to be called once.
func (l *Locks[K]) Lock(k K) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[K]*entry{}
	}
	e := l.locks[k]
	if e == nil {
		e = &entry{}
		l.locks[k] = e
	}
	e.users++
	l.mu.Unlock()
	e.Lock()
	return func() {
		e.Unlock()
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.locks, k)
		}
		l.mu.Unlock()
	}
}

// Users returns how many callers hold or wait for the lock of k: for tests that must
// know a caller is waiting.
func (l *Locks[K]) Users(k K) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.locks[k]; e != nil {
		return e.users
	}
	return 0
}
