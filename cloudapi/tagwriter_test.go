package cloudapi_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// tagCloud is a cloud whose resources carry sets of tags written one tag per call, a tag
// made before its first use. meet, when set, holds each Read until another Read has
// come, or until it times out: two writes that read at once then both see the set before
// either writes.
type tagCloud struct {
	mu    sync.Mutex
	made  map[string]bool
	sets  map[string][]string
	calls []string
	meet  chan struct{}
}

func (c *tagCloud) record(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
}

func (c *tagCloud) writer() *cloudapi.TagWriter {
	return &cloudapi.TagWriter{
		Rules: cloudapi.DigitalOceanTagRules,
		Read: func(_ context.Context, id string) ([]string, error) {
			c.mu.Lock()
			set := slices.Clone(c.sets[id])
			c.mu.Unlock()
			if c.meet != nil {
				select {
				case c.meet <- struct{}{}:
				case <-c.meet:
				case <-time.After(200 * time.Millisecond):
				}
			}
			c.record("read " + id)
			return set, nil
		},
		Create: func(_ context.Context, tag string) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.calls = append(c.calls, "create "+tag)
			if c.made[tag] {
				return cloudapi.NewError(cloudapi.ErrConflict, "", tag, errors.New("tag exists"))
			}
			c.made[tag] = true
			return nil
		},
		Attach: func(_ context.Context, id, tag string) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.calls = append(c.calls, "attach "+tag)
			if !c.made[tag] {
				return cloudapi.NewError(cloudapi.ErrInvalidRequest, "", tag, errors.New("no such tag"))
			}
			if !slices.Contains(c.sets[id], tag) {
				c.sets[id] = append(c.sets[id], tag)
			}
			return nil
		},
		Detach: func(_ context.Context, id, tag string) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.calls = append(c.calls, "detach "+tag)
			c.sets[id] = slices.DeleteFunc(c.sets[id], func(t string) bool { return t == tag })
			return nil
		},
	}
}

// TestTagWriterCalls: a write creates and attaches each tag missing (a tag that exists is
// still attached), then detaches each tag too many, keeping the foreign ones.
func TestTagWriterCalls(t *testing.T) {
	c := &tagCloud{made: map[string]bool{"web": true, "env:dev": true}, sets: map[string][]string{"1": {"web", "k8s", "k8s:prod", "env:dev"}}}
	w := c.writer()
	require.NoError(t, w.Write(t.Context(), cloudapi.OpUpdateLoadBalancer, "1", map[string]string{"env": "prod", "web": ""}))
	assert.Equal(t, []string{"read 1", "create env:prod", "attach env:prod", "detach env:dev"}, c.calls)
	assert.ElementsMatch(t, []string{"web", "k8s", "k8s:prod", "env:prod"}, c.sets["1"])

	c.calls = nil
	require.NoError(t, w.Write(t.Context(), cloudapi.OpUpdateLoadBalancer, "1", map[string]string{"env": "prod", "web": ""}))
	assert.Equal(t, []string{"read 1"}, c.calls, "nothing to change: a read")

	c.calls = nil
	err := w.Write(t.Context(), cloudapi.OpUpdateLoadBalancer, "1", map[string]string{"a": string(make([]byte, 2000))})
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	assert.Empty(t, c.calls, "tags the rules cannot carry: no call")
}

// TestTagWriterConcurrent: two writes of one resource at once, each of another value of
// a key, leave one of the values (the later write's), never both.
func TestTagWriterConcurrent(t *testing.T) {
	c := &tagCloud{made: map[string]bool{}, sets: map[string][]string{"1": {"cluster:old"}}, meet: make(chan struct{})}
	w := c.writer()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, v := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.Write(t.Context(), cloudapi.OpUpdateLoadBalancer, "1", map[string]string{"cluster": v})
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Len(t, c.sets["1"], 1, "one value of the key: %q", c.sets["1"])
	got, err := cloudapi.DecodeTagSet(c.sets["1"], cloudapi.DigitalOceanTagRules)
	require.NoError(t, err)
	assert.Contains(t, []string{"a", "b"}, got["cluster"])
}

// TestTagWriterCanceled: a write whose context ends while another write of the resource
// holds its turn ends with ErrTransient, and a later write gets its turn.
func TestTagWriterCanceled(t *testing.T) {
	c := &tagCloud{made: map[string]bool{}, sets: map[string][]string{}}
	w := c.writer()
	entered, block := make(chan struct{}), make(chan struct{})
	read := w.Read
	w.Read = func(ctx context.Context, id string) ([]string, error) {
		entered <- struct{}{}
		<-block
		return read(ctx, id)
	}
	first := make(chan error)
	go func() { first <- w.Write(t.Context(), cloudapi.OpUpdateLoadBalancer, "1", map[string]string{"a": "1"}) }()
	<-entered // the first write holds its turn
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := w.Write(ctx, cloudapi.OpUpdateLoadBalancer, "1", map[string]string{"a": "2"})
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	close(block)
	require.NoError(t, <-first)
	w.Read = read
	require.NoError(t, w.Write(t.Context(), cloudapi.OpUpdateLoadBalancer, "1", map[string]string{"a": "3"}))
	assert.Equal(t, []string{"a:3"}, c.sets["1"])
}
