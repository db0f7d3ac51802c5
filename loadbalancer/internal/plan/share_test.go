package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// ls is a listener of the Service with UID uid on port p (TCP), forwarding to node port
// np.
func ls(uid string, p, np int32) cloudapi.Listener {
	return cloudapi.Listener{Name: ListenerName(uid, "p"), Protocol: cloudapi.ProtocolTCP, Port: p, TargetPort: np}
}

// lb is a share's load balancer with the listeners and, as everything it shares,
// proxy protocol off.
func lb(listeners ...cloudapi.Listener) *cloudapi.LoadBalancer {
	return &cloudapi.LoadBalancer{ID: "lb-1", Spec: cloudapi.LoadBalancerSpec{Name: "s", Listeners: listeners, Targets: []string{"i-1"}}}
}

// wants is what the Service asks for: its listeners, proxy protocol as given.
func wants(proxy bool, listeners ...cloudapi.Listener) cloudapi.LoadBalancerSpec {
	return cloudapi.LoadBalancerSpec{Name: "s", Listeners: listeners, Targets: []string{"i-1"}, ProxyProtocol: proxy}
}

// member is a synced member that agreed, asking for the listeners, proxy protocol off.
func member(name string, listeners ...cloudapi.Listener) Member {
	return Member{Name: name, Part: SharedPart(wants(false)), Listeners: listeners, Agreed: true}
}

func same(a, b cloudapi.LoadBalancerSpec) bool { return cloudapi.DiffLoadBalancer(a, b).Empty() }

func ports(listeners []cloudapi.Listener) map[string][]int32 {
	out := map[string][]int32{}
	for _, l := range listeners {
		out[ListenerOwner(l.Name)] = append(out[ListenerOwner(l.Name)], l.Port)
	}
	return out
}

func TestJoin(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        JoinInput
		disagrees string
		ports     map[string][]int32
		taken     []Held
	}{
		{
			name:  "the first Service of a share",
			in:    JoinInput{UID: "a", Want: wants(false, ls("a", 80, 30080))},
			ports: map[string][]int32{"a": {80}},
		},
		{
			name:  "another Service's listeners stay, the Service's are replaced",
			in:    JoinInput{UID: "a", Want: wants(false, ls("a", 81, 30081)), Current: lb(ls("a", 80, 30080), ls("b", 22, 30022))},
			ports: map[string][]int32{"a": {81}, "b": {22}},
		},
		{
			name:  "a port another Service has is left out, naming it",
			in:    JoinInput{UID: "a", Want: wants(false, ls("a", 80, 30080), ls("a", 443, 30443)), Current: lb(ls("b", 80, 30081))},
			ports: map[string][]int32{"a": {443}, "b": {80}},
			taken: []Held{{Listener: ls("a", 80, 30080), Holder: "b"}},
		},
		{
			name: "a port the Service frees goes to the member waiting for it",
			in: JoinInput{UID: "a", Want: wants(false, ls("a", 8080, 30080)), Current: lb(ls("a", 80, 30080)),
				Known: map[string]Member{"b": member("ns/b", ls("b", 80, 30081))}},
			ports: map[string][]int32{"a": {8080}, "b": {80}},
		},
		{
			name: "a member that disagreed gets no port handed over",
			in: JoinInput{UID: "a", Want: wants(false, ls("a", 8080, 30080)), Current: lb(ls("a", 80, 30080)),
				Known: map[string]Member{"b": {Name: "ns/b", Part: SharedPart(wants(true)), Listeners: []cloudapi.Listener{ls("b", 80, 30081)}}}},
			ports: map[string][]int32{"a": {8080}},
		},
		{
			name: "a port never on the load balancer is not handed over (a listener the cloud refused)",
			in: JoinInput{UID: "a", Want: wants(false, ls("a", 80, 30080), ls("a", 443, 30443)), Current: lb(ls("a", 80, 30080)),
				Known: map[string]Member{"b": member("ns/b", ls("b", 7000, 30081))}},
			ports: map[string][]int32{"a": {80, 443}},
		},
		{
			name: "a port freed in a write of another shared part is not handed to a member that asked for the old one",
			in: JoinInput{UID: "a", Want: wants(true, ls("a", 8080, 30080)), Current: lb(ls("a", 80, 30080)),
				Known: map[string]Member{"b": member("ns/b", ls("b", 80, 30081))}},
			ports: map[string][]int32{"a": {8080}},
		},
		{
			name:  "listeners of no Service are dropped",
			in:    JoinInput{UID: "a", Want: wants(false, ls("a", 80, 30080)), Current: lb(cloudapi.Listener{Name: "manual", Protocol: cloudapi.ProtocolTCP, Port: 9}, ls("b", 22, 30022))},
			ports: map[string][]int32{"a": {80}, "b": {22}},
		},
		{
			name:  "a duplicate's listeners of other Services are carried over",
			in:    JoinInput{UID: "a", Want: wants(false, ls("a", 80, 30080)), Current: lb(), Carry: []cloudapi.Listener{ls("b", 22, 30022), ls("a", 81, 30081)}},
			ports: map[string][]int32{"a": {80}, "b": {22}},
		},
		{
			name: "another shared part than a synced member's disagrees",
			in: JoinInput{UID: "a", Want: wants(true, ls("a", 80, 30080)), Current: lb(ls("b", 22, 30022)),
				Known: map[string]Member{"b": member("ns/b", ls("b", 22, 30022))}},
			disagrees: "Service ns/b",
		},
		{
			name:      "another shared part than an unsynced member's load balancer has disagrees",
			in:        JoinInput{UID: "a", Want: wants(true, ls("a", 80, 30080)), Current: lb(ls("b", 22, 30022))},
			disagrees: "load balancer lb-1 as Service with UID b has it",
		},
		{
			name:  "alone on the load balancer, a Service changes what it shares",
			in:    JoinInput{UID: "a", Want: wants(true, ls("a", 80, 30080)), Current: lb(ls("a", 80, 30080))},
			ports: map[string][]int32{"a": {80}},
		},
		{
			name: "the last member to ask for a new shared part makes the change",
			in: JoinInput{UID: "a", Want: wants(true, ls("a", 80, 30080)), Current: lb(ls("b", 22, 30022)),
				Known: map[string]Member{"b": {Name: "ns/b", Part: SharedPart(wants(true)), Agreed: false}}},
			ports: map[string][]int32{"a": {80}, "b": {22}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Same = same
			j := Join(tc.in)
			assert.Equal(t, tc.disagrees, j.Disagrees)
			assert.Equal(t, tc.disagrees == "", j.Me.Agreed)
			if tc.disagrees != "" {
				return
			}
			assert.Equal(t, tc.ports, ports(j.Spec.Listeners))
			assert.Equal(t, tc.taken, j.Taken)
		})
	}
}

func TestLeave(t *testing.T) {
	waiting := map[string]Member{"b": member("ns/b", ls("b", 80, 30081))}
	for _, tc := range []struct {
		name        string
		lb          *cloudapi.LoadBalancer
		known       map[string]Member
		othersExist bool
		needs       bool
		op          LeaveOp
		ports       map[string][]int32
		noTargets   bool
	}{
		{name: "the last Service out", lb: lb(ls("a", 80, 30080)), needs: true, op: Last},
		{name: "a Service of the share without listeners keeps it", lb: lb(ls("a", 80, 30080)), othersExist: true, needs: true, op: Update, ports: map[string][]int32{}, noTargets: true},
		{name: "another Service's listener keeps it", lb: lb(ls("a", 80, 30080), ls("b", 22, 30022)), op: Update, ports: map[string][]int32{"b": {22}}},
		{name: "another Service's listener keeps it whatever the count", lb: lb(ls("b", 22, 30022)), op: Stay},
		{name: "the port freed goes to the member waiting for it", lb: lb(ls("a", 80, 30080)), known: waiting, othersExist: true, needs: true, op: Update, ports: map[string][]int32{"b": {80}}},
		{name: "a listener of no Service goes", lb: lb(cloudapi.Listener{Name: "manual", Port: 9, Protocol: cloudapi.ProtocolTCP}, ls("b", 22, 30022)), op: Update, ports: map[string][]int32{"b": {22}}},
		{name: "a share's load balancer with nothing on it and no member left", lb: lb(), needs: true, op: Last},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.needs, NeedsMembers(*tc.lb, "a"))
			left := Leave("a", *tc.lb, tc.known, tc.othersExist, same)
			assert.Equal(t, tc.op, left.Op)
			if tc.op != Update {
				return
			}
			assert.Equal(t, tc.ports, ports(left.Spec.Listeners))
			assert.Equal(t, tc.noTargets, len(left.Spec.Targets) == 0)
		})
	}
}

func TestUnserved(t *testing.T) {
	me := member("ns/a", ls("a", 80, 30080), ls("a", 443, 30443))
	for _, tc := range []struct {
		name string
		me   Member
		lb   *cloudapi.LoadBalancer
		held []string
	}{
		{name: "every port another's", me: me, lb: lb(ls("b", 80, 1), ls("c", 443, 2)), held: []string{"b", "c"}},
		{name: "one port its own", me: me, lb: lb(ls("b", 80, 1), ls("a", 443, 30443))},
		{name: "a port not written yet", me: me, lb: lb(ls("b", 80, 1))},
		{name: "a member that disagreed", me: Member{Name: "ns/a", Listeners: me.Listeners}, lb: lb(ls("b", 80, 1), ls("c", 443, 2))},
		{name: "a member without ports", me: member("ns/a"), lb: lb(ls("b", 80, 1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var holders []string
			for _, h := range Unserved("a", tc.me, *tc.lb) {
				holders = append(holders, h.Holder)
			}
			assert.Equal(t, tc.held, holders)
		})
	}
}

func TestDuplicates(t *testing.T) {
	a := cloudapi.LoadBalancer{ID: "a", Addresses: []string{"192.0.2.1"}}
	b := cloudapi.LoadBalancer{ID: "b", Addresses: []string{"192.0.2.2"}}
	c := cloudapi.LoadBalancer{ID: "c", Hostname: "c.example.com"}
	ids := func(lbs []cloudapi.LoadBalancer) []string {
		var out []string
		for _, l := range lbs {
			out = append(out, l.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		found        []cloudapi.LoadBalancer
		prefer       string
		published    []string
		kept, extras []string
	}{
		{name: "none", found: nil, kept: nil},
		{name: "one", found: []cloudapi.LoadBalancer{a}, kept: []string{"a"}},
		{name: "one listed twice is no duplicate", found: []cloudapi.LoadBalancer{a, a}, kept: []string{"a"}},
		{name: "the first by default", found: []cloudapi.LoadBalancer{a, b, c}, kept: []string{"a"}, extras: []string{"b", "c"}},
		{name: "the one named for adoption", found: []cloudapi.LoadBalancer{a, b}, prefer: "b", kept: []string{"b"}, extras: []string{"a"}},
		{name: "the one whose address is published", found: []cloudapi.LoadBalancer{a, b}, published: []string{"192.0.2.2"}, kept: []string{"b"}, extras: []string{"a"}},
		{name: "the one whose hostname is published", found: []cloudapi.LoadBalancer{a, c, a}, published: []string{"c.example.com"}, kept: []string{"c"}, extras: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, extras := Duplicates(tc.found, tc.prefer, tc.published)
			assert.Equal(t, tc.kept, ids(kept))
			assert.Equal(t, tc.extras, ids(extras))
		})
	}
}

// TestReaches: a value a Service's status publishes is a load balancer's when it is one of
// its addresses or its hostname; an empty hostname matches nothing, and Endpoints never
// changes the load balancer's addresses.
func TestReaches(t *testing.T) {
	withHost := cloudapi.LoadBalancer{Addresses: make([]string, 1, 4), Hostname: "lb.example.com"}
	withHost.Addresses[0] = "192.0.2.1"
	for _, tc := range []struct {
		name string
		lb   cloudapi.LoadBalancer
		a    string
		want bool
	}{
		{"an address", withHost, "192.0.2.1", true},
		{"the hostname", withHost, "lb.example.com", true},
		{"another address", withHost, "192.0.2.2", false},
		{"no hostname is not the empty value", cloudapi.LoadBalancer{Addresses: []string{"192.0.2.1"}}, "", false},
		{"a hostname only", cloudapi.LoadBalancer{Hostname: "h.example.com"}, "h.example.com", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Reaches(tc.lb, tc.a))
		})
	}
	assert.Equal(t, []string{"192.0.2.1", "lb.example.com"}, Endpoints(withHost))
	assert.Equal(t, []string{"192.0.2.1"}, withHost.Addresses, "Endpoints appends to no load balancer's own slice")
	assert.Equal(t, "", withHost.Addresses[:2][1], "nor into its spare capacity")
}
