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
// nil), sorted, without duplicates. A node without a provider ID, or with one of another
// format, cannot be a target: it is skipped with a log line. A selector that selects none
// of the nodes is logged. The slice is the memo's, shared by every call of the node set:
// read only, as every spec's targets are (nothing here writes into a Targets slice, a
// spec that needs other targets gets another slice, and cloudapi's writes leave what they
// are given as it is), and clipped, so that an append copies it.
// set is the name of nodes when the node sync's clock has one (see nodeSetID), else 0.
func (p *planner) targets(logger klog.Logger, nodes []*corev1.Node, set nodeSetID, sel labels.Selector) []string {
	key := "" // the selector in its canonical form; "" selects every node, as nil does
	if sel != nil {
		key = sel.String()
	}
	if ids, ok := p.memo.lookup(nodes, set, key); ok {
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
	ids = slices.Clip(slices.Compact(ids))
	p.memo.store(nodes, set, key, ids)
	return ids
}

// maxMemoSelectors bounds how many selectors' targets the memo keeps for one node set.
const maxMemoSelectors = 64

// targetMemo remembers the targets of the last node set, per node selector. The service
// controller hands every Service the same Node objects, in a new order each time; parsing
// and sorting 5,000 provider IDs is then most of a converged EnsureLoadBalancer's CPU. A
// node set matches the memo when it is the memo's (see nodeSet); its targets are then
// handed out as they are, read only: copying 20,000 targets was a converged
// EnsureLoadBalancer's largest allocation. The targets depend on
// nothing else but the labels, which are read when a selector's targets are stored. The
// Node objects the service controller passes come from its informer, which replaces a Node
// whose labels change with a new object; the node set then differs.
//
// A node sync hands every Service the same node set, which the node set clock checks as
// each call arrives (nodeSetClock.observe) and names (nodeSetID): a call that gives the
// memo the name of its set, the one the memo's set was last given, is not checked again.
type targetMemo struct {
	mu  sync.Mutex
	set nodeSet
	id  nodeSetID           // the name of set, when it was given one; 0: none
	ids map[string][]string // by selector ("" for every node); sorted, without duplicates, clipped; read only
}

// nodeSetID names the Nodes a nodeSetClock handed to a call (see nodeSetClock.observe):
// calls given the same nonzero name by one clock were given the same Node objects (in any
// order), with the provider IDs they had when the clock checked them. 0 names none.
type nodeSetID uint64

// lookup returns the memo's targets of the selector key when nodes (named id, or 0) is
// the memo's node set.
func (m *targetMemo) lookup(nodes []*corev1.Node, id nodeSetID, key string) ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids, ok := m.ids[key]
	if !ok || !m.same(nodes, id) {
		return nil, false
	}
	return ids, true
}

// store records ids as the targets of the selector key on nodes (named id, or 0): beside
// the other selectors' when nodes is the memo's node set, else as the memo's only entry.
// A node set that holds a Node twice is not stored.
func (m *targetMemo) store(nodes []*corev1.Node, id nodeSetID, key string, ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.same(nodes, id) {
		if len(m.ids) >= maxMemoSelectors {
			clear(m.ids)
		}
		m.ids[key] = ids
		return
	}
	if m.set.reset(nodes) {
		m.id = id
		m.ids = map[string][]string{key: ids}
	}
}

// same reports whether nodes (named id, or 0) is the memo's node set: by its name, when
// both have the same, else by a check of its Nodes, after which the set bears id's name.
// m.mu is held.
func (m *targetMemo) same(nodes []*corev1.Node, id nodeSetID) bool {
	if id != 0 && id == m.id {
		return true
	}
	if !m.set.holds(nodes) {
		return false
	}
	if id != 0 {
		m.id = id
	}
	return true
}

// nodeSet remembers one set of Node objects, to tell whether a later node set is the same:
// it holds exactly these Node objects (by pointer, each once, in any order), none with a
// different provider ID than when it was remembered. It is not safe for concurrent use.
//
// A check of 20,000 Nodes in a random order is bound by cache misses: each Node's entry
// holds its provider ID beside its position (one miss for both), and which Nodes a check
// has met is a bitset (2.5 KB at 20,000 Nodes, in the first-level cache).
type nodeSet struct {
	index map[*corev1.Node]rememberedNode // nil: none remembered
	met   []uint64                        // the Nodes the check under way has met, a bit a position
}

// rememberedNode is a Node of a nodeSet: its position (its bit in met) and its provider ID
// when remembered.
type rememberedNode struct {
	pos        int32
	providerID string
}

// holds reports whether nodes is the remembered node set.
func (s *nodeSet) holds(nodes []*corev1.Node) bool {
	if s.index == nil || len(nodes) != len(s.index) {
		return false
	}
	clear(s.met)
	for _, n := range nodes {
		r, ok := s.index[n]
		if !ok || !s.meet(r.pos) || r.providerID != n.Spec.ProviderID {
			return false // another Node, one given twice, or a changed provider ID
		}
	}
	return true
}

// meet marks the Node at pos as met by the check under way, and reports whether it was
// not met before.
func (s *nodeSet) meet(pos int32) bool {
	word, bit := pos/64, uint64(1)<<(pos%64)
	if s.met[word]&bit != 0 {
		return false
	}
	s.met[word] |= bit
	return true
}

// reset remembers nodes instead, and reports whether it could: a node set that holds a
// Node twice (or more Nodes than an int32 counts) is not remembered, and the previous one
// is kept.
func (s *nodeSet) reset(nodes []*corev1.Node) bool {
	if len(nodes) > math.MaxInt32 {
		return false
	}
	index := make(map[*corev1.Node]rememberedNode, len(nodes))
	for i, n := range nodes {
		index[n] = rememberedNode{pos: int32(i), providerID: n.Spec.ProviderID}
	}
	if len(index) != len(nodes) {
		return false
	}
	s.index, s.met = index, make([]uint64, (len(nodes)+63)/64)
	return true
}
