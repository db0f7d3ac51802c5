package loadbalancer

import (
	"math"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/internal/quote"
)

// targets returns the instance IDs of the nodes that sel selects (every node when sel is
// nil), sorted. A node without a provider ID, or with one of another format, cannot be a
// target: it is skipped with a log line. A selector that selects none of the nodes is
// logged.
func (p *planner) targets(logger klog.Logger, nodes []*corev1.Node, sel labels.Selector) []string {
	key := "" // the selector in its canonical form; "" selects every node, as nil does
	if sel != nil {
		key = sel.String()
	}
	if ids, ok := p.memo.lookup(nodes, key); ok {
		return ids
	}
	ids := make([]string, 0, len(nodes))
	selected := 0
	for _, n := range nodes {
		if key != "" && !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		selected++
		if n.Spec.ProviderID == "" {
			logger.V(2).Info("Skipping node without a provider ID as load balancer target", "node", klog.KObj(n))
			continue
		}
		id, err := p.providerID.InstanceID(n.Spec.ProviderID)
		if err != nil {
			logger.Info("Skipping node as load balancer target", "node", klog.KObj(n), "err", err)
			continue
		}
		ids = append(ids, id)
	}
	if selected == 0 && len(nodes) > 0 {
		logger.Info("The node selector selects none of the nodes: the load balancer has no targets", "nodeSelector", quote.Text(key), "nodes", len(nodes))
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	p.memo.store(nodes, key, ids)
	return slices.Clone(ids)
}

// maxMemoSelectors bounds how many selectors' targets the memo keeps for one node set.
const maxMemoSelectors = 64

// targetMemo remembers the targets of the last node set, per node selector. The service
// controller hands every Service the same Node objects, in a new order each time; parsing
// and sorting 5,000 provider IDs is then most of a converged EnsureLoadBalancer's CPU. A
// node set matches the memo when it is the memo's (see nodeSet). The targets depend on
// nothing else but the labels, which are read when a selector's targets are stored. The
// Node objects the service controller passes come from its informer, which replaces a Node
// whose labels change with a new object; the node set then differs.
type targetMemo struct {
	mu  sync.Mutex
	set nodeSet
	ids map[string][]string // by selector ("" for every node); sorted, without duplicates; never handed out, only copies
}

// lookup returns a copy of the memo's targets of the selector key when nodes is the
// memo's node set.
func (m *targetMemo) lookup(nodes []*corev1.Node, key string) ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids, ok := m.ids[key]
	if !ok || !m.set.holds(nodes) {
		return nil, false
	}
	return slices.Clone(ids), true
}

// store records ids as the targets of the selector key on nodes: beside the other
// selectors' when nodes is the memo's node set, else as the memo's only entry. A node set
// that holds a Node twice is not stored.
func (m *targetMemo) store(nodes []*corev1.Node, key string, ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.set.holds(nodes) {
		if len(m.ids) >= maxMemoSelectors {
			clear(m.ids)
		}
		m.ids[key] = ids
		return
	}
	if m.set.reset(nodes) {
		m.ids = map[string][]string{key: ids}
	}
}

// nodeSet remembers one set of Node objects, to tell whether a later node set is the same:
// it holds exactly these Node objects (by pointer, each once, in any order), none with a
// different provider ID than when it was remembered. It is not safe for concurrent use.
//
// The per-Node state lives in two dense slices rather than behind a pointer per Node: a
// check of 20,000 Nodes in a random order is bound by cache misses, and this saves one a
// Node.
type nodeSet struct {
	index       map[*corev1.Node]int32 // each Node object's position in providerIDs and seen; nil: none remembered
	providerIDs []string               // each Node's provider ID when remembered
	seen        []uint64               // the check that last met each Node
	visits      uint64                 // checks so far: marks which Nodes a check has met
}

// holds reports whether nodes is the remembered node set.
func (s *nodeSet) holds(nodes []*corev1.Node) bool {
	if s.index == nil || len(nodes) != len(s.index) {
		return false
	}
	s.visits++
	for _, n := range nodes {
		i, ok := s.index[n]
		if !ok || s.seen[i] == s.visits || s.providerIDs[i] != n.Spec.ProviderID {
			return false // another Node, one given twice, or a changed provider ID
		}
		s.seen[i] = s.visits
	}
	return true
}

// reset remembers nodes instead, and reports whether it could: a node set that holds a
// Node twice (or more Nodes than an int32 counts) is not remembered, and the previous one
// is kept.
func (s *nodeSet) reset(nodes []*corev1.Node) bool {
	if len(nodes) > math.MaxInt32 {
		return false
	}
	index := make(map[*corev1.Node]int32, len(nodes))
	providerIDs := make([]string, len(nodes))
	for i, n := range nodes {
		index[n] = int32(i)
		providerIDs[i] = n.Spec.ProviderID
	}
	if len(index) != len(nodes) {
		return false
	}
	s.index, s.providerIDs, s.seen = index, providerIDs, make([]uint64, len(nodes))
	return true
}
