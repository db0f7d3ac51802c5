package soak

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/loadbalancer"
)

// opKind is a kind of operation on the cluster or the cloud.
type opKind int

// The operations. Each is what a user, a kubelet, an autoscaler, the cloud or an operator
// does; the controllers react to it.
const (
	opCreateService     opKind = iota // a user creates a Service
	opUpdatePorts                     // a user changes a Service's ports
	opUpdateAnnotations               // a user replaces a Service's annotations
	opSetType                         // a user changes a Service's type to LoadBalancer or ClusterIP
	opDeleteService                   // a user deletes a Service
	opAddNode                         // an instance starts and its kubelet registers the Node
	opRemoveNode                      // an autoscaler deletes the Node and then its instance
	opDrainNode                       // an autoscaler taints the Node ToBeDeletedByClusterAutoscaler
	opExcludeNode                     // an admin sets or removes the exclude-from-external-load-balancers label
	opShutdownNode                    // the instance is stopped; the Node turns NotReady
	opStartNode                       // the instance runs again; the Node turns Ready
	opKubeletDown                     // the Node turns NotReady; the instance keeps running
	opDeleteInstance                  // the cloud deletes the instance; the Node turns NotReady
	opTerminateInstance               // the instance is terminated (still listed); the Node turns NotReady
	opRestart                         // the cloud-controller-manager restarts
)

var opNames = map[opKind]string{
	opCreateService: "create-service", opUpdatePorts: "update-ports", opUpdateAnnotations: "update-annotations",
	opSetType: "set-type", opDeleteService: "delete-service", opAddNode: "add-node", opRemoveNode: "remove-node",
	opDrainNode: "drain-node", opExcludeNode: "exclude-node", opShutdownNode: "shutdown-node",
	opStartNode: "start-node", opKubeletDown: "kubelet-down", opDeleteInstance: "delete-instance",
	opTerminateInstance: "terminate-instance", opRestart: "restart-ccm",
}

func (k opKind) String() string {
	if s, ok := opNames[k]; ok {
		return s
	}
	return fmt.Sprintf("opKind(%d)", int(k))
}

// op is one operation of a history, with every random choice made at generation, so that
// a sub-history means the same operations. Operations whose object does not exist when they
// run are skipped.
type op struct {
	// Index is the operation's position in the generated history; the faults of its step
	// are drawn from the seed and Index.
	Index int
	Kind  opKind
	// Name is the Service or Node the operation is about.
	Name string
	// Num numbers a Node; its instance, address and pod CIDR derive from it.
	Num int
	// Ports are the Service's ports (create-service, update-ports), node ports unset.
	Ports []corev1.ServicePort
	// Annotations are the Service's annotations (create-service, update-annotations).
	Annotations map[string]string
	// LoadBalancer is the Service type (create-service, set-type): LoadBalancer or ClusterIP.
	LoadBalancer bool
	// Local is externalTrafficPolicy Local (create-service).
	Local bool
	// DualStack asks for IPv4 and IPv6 (create-service).
	DualStack bool
	// SourceRanges are spec.loadBalancerSourceRanges (create-service).
	SourceRanges []string
	// ProviderID is true when the kubelet registers the Node with its provider ID
	// (add-node); else the cloud node controller sets it.
	ProviderID bool
	// Exclude sets (true) or removes the exclude label (exclude-node).
	Exclude bool
	// Adopt makes the Service name a load balancer without ccmkit tags by ID
	// (create-service), when the cloud has one that no other Service names; the run
	// chooses it (see sim.adopt).
	Adopt bool
	// Share is the share the Service names (create-service, update-annotations), "" for
	// none; Agree makes it ask for what the other Services of the share ask for beside
	// its ports (see sim.prepareShare). Only a run with shares applies them.
	Share string
	Agree bool
	// Namespace is the Service's namespace (create-service); TakePorts makes a Service
	// that joins a share (create-service, update-annotations) ask for the ports another
	// Service of the share has, so that it waits for them (see sim.prepareShare). Only a
	// run with shares applies them.
	Namespace string
	TakePorts bool
	// Project switches the cloud config after the operation: to another project
	// (projectOther) or back to the cluster's (projectOwn); empty for neither. Only a run
	// with project switches applies it (see project_test.go).
	Project string
	// Advance is the virtual time the controllers run after the operation.
	Advance time.Duration
}

func (o op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", o.Index, o.Kind)
	if o.Name != "" {
		fmt.Fprintf(&b, " %s", o.Name)
	}
	typ := func() string {
		if o.LoadBalancer {
			return "LoadBalancer"
		}
		return "ClusterIP"
	}
	switch o.Kind {
	case opCreateService:
		fmt.Fprintf(&b, " type=%s ports=%s", typ(), portsString(o.Ports))
		if o.Local {
			b.WriteString(" etp=Local")
		}
		if o.DualStack {
			b.WriteString(" dual-stack")
		}
		if len(o.SourceRanges) > 0 {
			fmt.Fprintf(&b, " ranges=%v", o.SourceRanges)
		}
		if o.Adopt {
			b.WriteString(" adopt")
		}
		fmt.Fprintf(&b, " annotations=%s%s namespace=%s", annotationsString(o.Annotations), o.shareString(), o.Namespace)
	case opUpdatePorts:
		fmt.Fprintf(&b, " ports=%s", portsString(o.Ports))
	case opUpdateAnnotations:
		fmt.Fprintf(&b, " annotations=%s%s", annotationsString(o.Annotations), o.shareString())
	case opSetType:
		fmt.Fprintf(&b, " type=%s", typ())
	case opAddNode:
		if o.ProviderID {
			b.WriteString(" provider-id-from-kubelet")
		}
	case opExcludeNode:
		fmt.Fprintf(&b, " exclude=%t", o.Exclude)
	}
	if o.Project != "" {
		fmt.Fprintf(&b, " project=%s", o.Project)
	}
	fmt.Fprintf(&b, " then %s", o.Advance)
	return b.String()
}

// shareString is the share of a create-service or update-annotations operation, for its
// String.
func (o op) shareString() string {
	switch {
	case o.Share == "":
		return " share=none"
	case o.Agree && o.TakePorts:
		return " share=" + o.Share + " agreeing taking-ports"
	case o.TakePorts:
		return " share=" + o.Share + " taking-ports"
	case o.Agree:
		return " share=" + o.Share + " agreeing"
	}
	return " share=" + o.Share
}

func portsString(ports []corev1.ServicePort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%s:%s/%d", p.Name, p.Protocol, p.Port)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func annotationsString(a map[string]string) string {
	parts := make([]string, 0, len(a))
	for _, k := range slices.Sorted(maps.Keys(a)) {
		parts = append(parts, strings.TrimPrefix(k, loadbalancer.DefaultAnnotationPrefix)+"="+a[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// Bounds of the generated cluster.
const (
	maxServices = 12
	maxNodes    = 10
)

// generator makes a random history from a seed. It keeps a rough model of what exists, to
// choose sensible targets; the run decides what really happens.
type generator struct {
	rng *rand.Rand
	// handover draws the choices about keeping and adopting load balancers, from a stream
	// of its own, so that they left the histories of every seed as they were (the
	// regressions pin operations by index).
	handover *rand.Rand
	// sharing draws the share of a Service (op.Share, op.Agree), from a stream of its own
	// for the same reason.
	sharing *rand.Rand
	// placing draws a Service's namespace and whether it takes another's ports
	// (op.Namespace, op.TakePorts), and projects the project switches (op.Project), each
	// from a stream of its own for the same reason; away is whether the history's last
	// switch was to another project.
	placing, projects *rand.Rand
	away              bool
	services          map[string]bool // live Service names → type LoadBalancer
	deleted           []string        // names of deleted Services, which may be reused
	nodes             []string        // Nodes whose instance should exist
	svcSeq            int
	nodeSeq           int
}

// generate returns the history of n operations for seed.
func generate(seed int64, n int) []op {
	g := &generator{
		rng:      rand.New(rand.NewPCG(uint64(seed), 0x50a4c0de)),
		handover: rand.New(rand.NewPCG(uint64(seed), 0xad0b7)),
		sharing:  rand.New(rand.NewPCG(uint64(seed), 0x5ba4e)),
		placing:  rand.New(rand.NewPCG(uint64(seed), 0x9ace)),
		projects: rand.New(rand.NewPCG(uint64(seed), 0x9a0e)),
		services: map[string]bool{},
	}
	ops := make([]op, n)
	for i := range ops {
		ops[i] = g.next(i)
	}
	return ops
}

func (g *generator) next(i int) op {
	type choice struct {
		kind   opKind
		weight int
	}
	var choices []choice
	add := func(k opKind, w int) { choices = append(choices, choice{k, w}) }
	nSvc, nNodes := len(g.services), len(g.nodes)
	if nSvc < maxServices {
		add(opCreateService, 8)
	}
	if nSvc > 0 {
		add(opUpdatePorts, 6)
		add(opUpdateAnnotations, 8)
		add(opSetType, 4)
		add(opDeleteService, 2+nSvc/2)
	}
	switch {
	case nNodes < 2:
		add(opAddNode, 16)
	case nNodes < maxNodes:
		add(opAddNode, 5)
	}
	if nNodes > 0 {
		add(opRemoveNode, 2)
		add(opDrainNode, 1)
		add(opExcludeNode, 2)
		add(opShutdownNode, 3)
		add(opStartNode, 3)
		add(opKubeletDown, 2)
		add(opDeleteInstance, 2)
		add(opTerminateInstance, 1)
	}
	add(opRestart, 1)
	total := 0
	for _, c := range choices {
		total += c.weight
	}
	pick := g.rng.IntN(total)
	var kind opKind
	for _, c := range choices {
		if pick < c.weight {
			kind = c.kind
			break
		}
		pick -= c.weight
	}

	o := op{Index: i, Kind: kind, Advance: g.advance(), Project: g.project()}
	switch kind {
	case opCreateService:
		if len(g.deleted) > 0 && g.rng.IntN(3) == 0 {
			j := g.rng.IntN(len(g.deleted))
			o.Name = g.deleted[j]
			g.deleted = slices.Delete(g.deleted, j, j+1)
		} else {
			o.Name = fmt.Sprintf("svc-%d", g.svcSeq)
			g.svcSeq++
		}
		o.LoadBalancer = g.rng.IntN(10) > 0
		o.Ports = g.ports()
		o.Annotations = g.annotations(o.Name)
		o.Local = g.rng.IntN(5) == 0
		o.DualStack = g.rng.IntN(7) == 0
		o.Adopt = g.handover.IntN(4) == 0
		if g.rng.IntN(7) == 0 {
			o.SourceRanges = []string{"192.0.2.0/24"}
			if g.rng.IntN(2) == 0 {
				o.SourceRanges = append(o.SourceRanges, "198.51.100.128/25")
			}
		}
		o.Share, o.Agree = g.share()
		o.Namespace = namespaces[g.placing.IntN(len(namespaces))]
		o.TakePorts = g.placing.IntN(3) == 0
		g.services[o.Name] = o.LoadBalancer
	case opUpdatePorts:
		o.Name = g.someService()
		o.Ports = g.ports()
	case opUpdateAnnotations:
		o.Name = g.someService()
		o.Annotations = g.annotations(o.Name)
		o.Share, o.Agree = g.share()
		o.TakePorts = g.placing.IntN(3) == 0
	case opSetType:
		o.Name = g.someService()
		o.LoadBalancer = !g.services[o.Name]
		g.services[o.Name] = o.LoadBalancer
	case opDeleteService:
		o.Name = g.someService()
		delete(g.services, o.Name)
		g.deleted = append(g.deleted, o.Name)
	case opAddNode:
		o.Num = g.nodeSeq
		o.Name = fmt.Sprintf("node-%d", o.Num)
		o.ProviderID = g.rng.IntN(5) == 0
		g.nodeSeq++
		g.nodes = append(g.nodes, o.Name)
	case opRemoveNode, opDeleteInstance, opTerminateInstance:
		j := g.rng.IntN(len(g.nodes))
		o.Name = g.nodes[j]
		g.nodes = slices.Delete(g.nodes, j, j+1)
	case opExcludeNode:
		o.Name = g.nodes[g.rng.IntN(len(g.nodes))]
		o.Exclude = g.rng.IntN(2) == 0
	case opDrainNode, opShutdownNode, opStartNode, opKubeletDown:
		o.Name = g.nodes[g.rng.IntN(len(g.nodes))]
	}
	return o
}

// advance is the time the controllers get after an operation: mostly a few seconds,
// sometimes long enough for back-offs and the instance snapshot to expire.
func (g *generator) advance() time.Duration {
	ms := int64(g.rng.ExpFloat64() * 4000)
	if g.rng.IntN(40) == 0 {
		ms += g.rng.Int64N(120_000)
	}
	return time.Duration(min(ms, 180_000)) * time.Millisecond
}

// shareNames are the shares of a run with shares: few, so that Services meet in them,
// agreeing or not, on the same ports or not.
var shareNames = []string{"front", "back"}

// share returns the share a Service names, "" for none, and whether it agrees with the
// others of its share.
func (g *generator) share() (string, bool) {
	if g.sharing.IntN(5) < 2 {
		return "", false
	}
	return shareNames[g.sharing.IntN(len(shareNames))], g.sharing.IntN(3) > 0
}

// The values of op.Project.
const (
	projectOther = "other" // the cloud config now points at another project
	projectOwn   = "own"   // the cloud config points at the cluster's project again
)

// project returns the project switch after an operation: now and then to another
// project, and back a few dozen operations later (several virtual minutes: longer than
// the instance snapshot's age, within the brakes' window or beyond it).
func (g *generator) project() string {
	switch {
	case !g.away && g.projects.IntN(250) == 0:
		g.away = true
		return projectOther
	case g.away && g.projects.IntN(40) == 0:
		g.away = false
		return projectOwn
	}
	return ""
}

func (g *generator) someService() string {
	names := slices.Sorted(maps.Keys(g.services))
	return names[g.rng.IntN(len(names))]
}

// ports returns one to three Service ports with distinct protocol and port.
func (g *generator) ports() []corev1.ServicePort {
	candidates := []int32{80, 443, 53, 8080, 8443, 9000, 5432}
	n := 1 + g.rng.IntN(3)
	var out []corev1.ServicePort
	seen := map[string]bool{}
	for len(out) < n {
		proto := corev1.ProtocolTCP
		if g.rng.IntN(5) == 0 {
			proto = corev1.ProtocolUDP
		}
		port := candidates[g.rng.IntN(len(candidates))]
		key := fmt.Sprintf("%s/%d", proto, port)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, corev1.ServicePort{Name: fmt.Sprintf("p%d", len(out)), Protocol: proto, Port: port})
	}
	return out
}

// annotations returns valid load balancer annotations (each present or not), sometimes
// with an unknown key under the prefix (a typo ccmkit logs) and a foreign annotation.
func (g *generator) annotations(svcName string) map[string]string {
	const p = loadbalancer.DefaultAnnotationPrefix
	a := map[string]string{}
	maybe := func(percent int, key, value string) {
		if g.rng.IntN(100) < percent {
			a[key] = value
		}
	}
	pick := func(values ...string) string { return values[g.rng.IntN(len(values))] }
	maybe(30, p+loadbalancer.AnnotationInternal, pick("true", "false"))
	maybe(20, p+loadbalancer.AnnotationProxyProtocol, pick("true", "false"))
	maybe(20, p+loadbalancer.AnnotationName, fmt.Sprintf("lb-%s-g%d", svcName, g.rng.IntN(3)))
	maybe(20, p+loadbalancer.AnnotationHealthCheckProtocol, pick("TCP", "HTTP", "HTTPS"))
	maybe(10, p+loadbalancer.AnnotationHealthCheckPort, fmt.Sprint(1+g.rng.IntN(65535)))
	maybe(10, p+loadbalancer.AnnotationHealthCheckPath, pick("/ready", "/livez", "/"))
	if g.rng.IntN(10) == 0 {
		a[p+loadbalancer.AnnotationHealthCheckInterval] = pick("5s", "10s", "30s")
		a[p+loadbalancer.AnnotationHealthCheckTimeout] = pick("1s", "2s", "5s")
	}
	maybe(10, p+loadbalancer.AnnotationHealthCheckHealthyThreshold, fmt.Sprint(1+g.rng.IntN(10)))
	maybe(10, p+loadbalancer.AnnotationHealthCheckUnhealthyThreshold, fmt.Sprint(1+g.rng.IntN(10)))
	maybe(5, p+"internl", "true")
	maybe(20, "example.com/owner", pick("team-a", "team-b"))
	if g.handover.IntN(4) == 0 {
		a[p+loadbalancer.AnnotationKeepOnDelete] = []string{"true", "false"}[g.handover.IntN(2)]
	}
	return a
}
