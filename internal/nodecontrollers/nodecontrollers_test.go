package nodecontrollers

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	fakecloud "k8s.io/cloud-provider/fake"
)

// TestConstructors builds both controllers with the constructors of the k8s.io/cloud-provider
// this module is built with, so that every minor of the compatibility matrix runs it.
func TestConstructors(t *testing.T) {
	kube := k8sfake.NewClientset()
	nodes := informers.NewSharedInformerFactory(kube, 0).Core().V1().Nodes()
	cloud := &fakecloud.Cloud{}

	node, err := NewNode(nodes, kube, cloud, time.Minute, 1, 4)
	require.NoError(t, err)
	assert.NotNil(t, node)

	life, err := NewLifecycle(nodes, kube, cloud, time.Second, 2)
	require.NoError(t, err)
	assert.NotNil(t, life)

	// The constructors' own checks still answer: a nil client is refused, not a panic.
	_, err = NewLifecycle(nodes, nil, cloud, time.Second, 2)
	require.Error(t, err)
}

type ctrl struct{ counts []int64 }

func TestCall(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		fn      any
		counts  []int
		want    []int64
		wantErr string
	}{
		{"no worker argument", func(s string) (*ctrl, error) { return &ctrl{}, nil }, []int{3}, nil, ""},
		{"one int32", func(s string, a int32) (*ctrl, error) { return &ctrl{[]int64{int64(a)}}, nil }, []int{3, 5}, []int64{3}, ""},
		{"int32 and int", func(s string, a int32, b int) (*ctrl, error) { return &ctrl{[]int64{int64(a), int64(b)}}, nil }, []int{3, 5}, []int64{3, 5}, ""},
		{"more worker arguments than counts", func(s string, a, b, c int) (*ctrl, error) { return &ctrl{}, nil }, []int{3, 5}, nil, "unsupported constructor"},
		{"a fixed argument of another type", func(s int) (*ctrl, error) { return &ctrl{}, nil }, nil, nil, "argument 0 is int"},
		{"a worker argument that is no number", func(s string, a string) (*ctrl, error) { return &ctrl{}, nil }, []int{3}, nil, "worker argument 0"},
		{"the constructor's error", func(s string, a int) (*ctrl, error) { return nil, boom }, []int{1}, nil, "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call[*ctrl](tt.fn, []any{"x"}, tt.counts)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.counts)
		})
	}
}
