package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	cloudprovider "k8s.io/cloud-provider"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/provider"
)

// Column is one provider under test over a cloud of its own: a column of the report.
// Every column's world holds the same instances (WorldInstance), Nodes and Services and
// is driven by the same controllers, clock and scenarios.
type Column interface {
	// Name heads the column in the report and keys its figures in the JSON.
	Name() string
	// NewCloud returns a new cloud that holds the world's instances 0 to cfg.Nodes-1 and
	// nothing else.
	NewCloud(cfg CloudConfig) (Cloud, error)
}

// RealTimer is a Column whose provider waits in real time for each call (the AWS
// provider's batcher of DescribeInstances waits 100 ms for more requests before it sends
// one): a pass that asks about each of thousands of Nodes one at a time takes minutes of
// wall time per virtual pass. P1_outage then sets only a few Nodes NotReady (as many as a
// MonitorNodes pass asks about in a second, at most -p3-subset) and scales the
// MonitorNodes passes' calls linearly to the zone's (P3 is timed on -p3-subset Nodes for
// every peer).
type RealTimer interface {
	Column
	// WaitsPerCall returns how long the provider waits per call.
	WaitsPerCall() time.Duration
}

// Reaches is what a Cloud's Watch keeps: the different load balancers written so that they
// reach the watched instance (or, watching its removal, no longer do), and a channel closed
// once there are as many as wanted. It is safe for concurrent use.
type Reaches struct {
	mu      sync.Mutex
	want    int
	reached map[string]bool
	done    chan struct{}
}

// NewReaches returns a Reaches that wants want load balancers (none: Done is closed).
func NewReaches(want int) *Reaches {
	r := &Reaches{want: want, reached: map[string]bool{}, done: make(chan struct{})}
	if want <= 0 {
		close(r.done)
	}
	return r
}

// Done is closed once Reach has noted want different load balancers.
func (r *Reaches) Done() <-chan struct{} { return r.done }

// Reach notes that the load balancer lb (any key that names it) reaches the instance.
func (r *Reaches) Reach(lb string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reached[lb] || len(r.reached) >= r.want {
		return
	}
	r.reached[lb] = true
	if len(r.reached) == r.want {
		close(r.done)
	}
}

// Reached returns the load balancers noted so far, sorted.
func (r *Reaches) Reached() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.reached))
}

// CloudConfig is what a column's cloud is built for.
type CloudConfig struct {
	Nodes    int // the world's instances
	PageSize int // the list page size of a cloud whose page size is a setting
	// CloudAPI is ccmkit's cloudAPI section (the page size, the client-side limit) for a
	// column whose provider is ccmkit's.
	CloudAPI provider.CloudAPIConfig
}

// Cloud is a column's cloud: where its calls are counted, and where its provider comes from.
type Cloud interface {
	// NewProvider returns a new provider over the cloud, whose clock is clock (a provider
	// that reads no clock ignores it). It is the provider a cloud-controller-manager that
	// just started has: no state of an earlier provider.
	NewProvider(clock *clocktesting.FakeClock) (cloudprovider.Interface, error)
	// NodeName is the name the kubelet registers instance i's Node with, as the provider's
	// documentation asks for.
	NodeName(i int) string
	// ProviderID is the provider ID the provider gives instance i.
	ProviderID(i int) string
	// Calls returns every call the cloud has answered so far, by operation.
	Calls() Calls
	// AddInstance adds instance i of the world, running (node_add).
	AddInstance(i int) error
	// RemoveInstance deletes instance i, as the cloud does some time after it terminated:
	// from then on it is not found (node_delete).
	RemoveInstance(i int) error
	// SetLatency makes every following call wait d before the cloud answers it.
	SetLatency(d time.Duration)
	// Watch returns a channel that is closed once want different load balancers have been
	// written so that they reach instance i, or with removed, so that they no longer do.
	Watch(i, want int, removed bool) <-chan struct{}
	// Reaching returns how many of the cluster's load balancers reach instance i now.
	Reaching(i int) (int, error)
}

// Instance is what every column's cloud holds for one instance of the world.
type Instance struct {
	Index     int
	Zone      string // one of Zones, by index
	Region    string
	PrivateIP string // unique per index
}

// Region is the world's region; Zones are its zones.
const Region = "bench-1"

// Zones are the world's zones; instance i is in zone i mod 3.
var Zones = []string{"bench-1a", "bench-1b", "bench-1c"}

// WorldInstance returns instance i of the world.
func WorldInstance(i int) Instance {
	n := i + 1
	return Instance{
		Index: i, Zone: Zones[i%len(Zones)], Region: Region,
		PrivateIP: fmt.Sprintf("10.%d.%d.%d", n>>16, (n>>8)&255, n&255),
	}
}

// Op is a cloud operation as its cloud counts it.
type Op struct {
	Name string
	// Write is true for an operation that changes the cloud.
	Write bool
	// Instance is true for an operation on instances (what a Node's initialization costs,
	// as opposed to load balancers and routes).
	Instance bool
}

// Calls counts a cloud's calls by operation.
type Calls map[Op]int64

// Total returns every call.
func (c Calls) Total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// Writes returns the calls that change the cloud.
func (c Calls) Writes() int64 { return c.count(func(op Op) bool { return op.Write }) }

// Reads returns the calls that do not change the cloud.
func (c Calls) Reads() int64 { return c.count(func(op Op) bool { return !op.Write }) }

// InstanceCalls returns the calls on instances.
func (c Calls) InstanceCalls() int64 { return c.count(func(op Op) bool { return op.Instance }) }

// Of returns the calls of the operation named name.
func (c Calls) Of(name string) int64 { return c.count(func(op Op) bool { return op.Name == name }) }

func (c Calls) count(match func(Op) bool) int64 {
	var n int64
	for op, v := range c {
		if match(op) {
			n += v
		}
	}
	return n
}

// Sub returns the calls of c that were not yet in before.
func (c Calls) Sub(before Calls) Calls {
	out := Calls{}
	for op, n := range c {
		if d := n - before[op]; d != 0 {
			out[op] = d
		}
	}
	return out
}

// Only returns the calls of c whose operation matches.
func (c Calls) Only(match func(Op) bool) Calls {
	out := Calls{}
	for op, n := range c {
		if match(op) {
			out[op] = n
		}
	}
	return out
}

// ByName returns the calls by operation name.
func (c Calls) ByName() map[string]int64 {
	out := map[string]int64{}
	for op, n := range c {
		if n != 0 {
			out[op.Name] += n
		}
	}
	return out
}

// String lists the calls per operation, reads first, each in name order.
func (c Calls) String() string {
	ops := make([]Op, 0, len(c))
	for op, n := range c {
		if n != 0 {
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return "none"
	}
	slices.SortFunc(ops, func(a, b Op) int {
		if a.Write != b.Write {
			if a.Write {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Name, b.Name)
	})
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %d", op.Name, c[op])
	}
	return strings.Join(parts, ", ")
}
