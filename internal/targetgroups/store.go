package targetgroups

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/keyedlock"
	"github.com/ccmkit/ccmkit/internal/pace"
)

// AllNodes is the key (the cloudapi.TagTargetGroup value) of the group of every Node.
const AllNodes = "all-nodes"

// KeepNew is how many MaxAge an unused group that may be new is kept (see Deletable). It
// also caps the wait between collections that leave a group that looks unused.
const KeepNew = 32

// Deletable is the one rule by which a collection deletes a group of the cluster that no
// load balancer names: Store.Collect, and package sweeper's sweep of target groups, which
// also sees the groups no Store collects (left after target groups were turned off, or by
// a load balancer deleted while no Store ran). A group a load balancer named and let go
// (named) may go. Any other may be new, made for a load balancer whose create keeps
// failing, and is kept until since (when it was made, or first found unused; zero when it
// is not known to be new) is KeepNew times maxAge ago, so that such a Service does not
// have its group made and deleted at every retry.
func Deletable(named bool, since, now time.Time, maxAge time.Duration) bool {
	return named || since.IsZero() || !now.Before(since.Add(KeepNew*maxAge))
}

// Key returns the key of the group of the Nodes sel selects (nil: every Node).
func Key(sel labels.Selector) string {
	if sel == nil || sel.Empty() {
		return AllNodes
	}
	sum := sha256.Sum256([]byte(sel.String()))
	return "selector-" + hex.EncodeToString(sum[:8])
}

// LoadBalancers is what a Store needs to know of the cluster's load balancers, which
// name its groups: the order of their events, so that a read of a group can be told
// fresh, and which groups they name, so that a group in use is never deleted. Package
// loadbalancer's snapshot of the cluster's load balancers answers it from what it holds,
// so that a Store costs no call of the load balancer API of its own.
type LoadBalancers interface {
	// Tick marks an event in the order of events of the cluster's load balancers and
	// returns it: a list begun after it is a fresh read.
	Tick() uint64
	// Names reports whether a load balancer of the cluster, other than the one with ID
	// except, names the group with ID group (one the cloud is deleting does not count).
	Names(group, except string) bool
	// Refresh makes what Names knows no older than MaxAge, before a collection.
	Refresh(ctx context.Context) error
}

// Config is what a Store works with.
type Config struct {
	// API is the cloud's target group API.
	API cloudapi.TargetGroupAPI
	// ClusterID is the cluster's ID: the groups carry it in cloudapi.TagCluster.
	ClusterID string
	// NamePrefix begins the cloud name of every group: the cluster's own prefix of at
	// most 24 characters that begins the load balancers' names too (package
	// loadbalancer's namePrefix), so that two clusters' groups never share a name.
	NamePrefix string
	// PageSize is the page size of the lists; zero means the backend's default.
	PageSize int
	// MaxAge is how long what the Store last learnt about a group may skip a list.
	MaxAge time.Duration
	// Clock is the clock the Store ages by.
	Clock clock.PassiveClock
	// LoadBalancers is what the Store learns of the cluster's load balancers; required.
	LoadBalancers LoadBalancers
}

// Store is what is known about the cluster's target groups. It is safe for concurrent
// use; the calls about the group of one key are serialized.
type Store struct {
	cfg   Config
	locks keyedlock.Locks[string] // by key

	mu      sync.Mutex
	entries map[string]*entry // by key
	// known are the tags (as last read) of the groups known to be the cluster's, by group
	// ID, their key the cloudapi.TagTargetGroup tag: found by a list with the cluster's
	// tags (checked), or created by the Store. Only those are ever deleted.
	known map[string]map[string]string
	// users counts, by group ID, the Acquires not yet released: their load balancers
	// are not written yet, so the cloud cannot know of them, and the group is kept.
	users map[string]int
	// due is true when a group of the cluster may be unused (see Due). The next
	// collection lists the cluster's groups and deletes the unused.
	due bool
	// next is when the next collection may begin: at once after a clean one; after one
	// whose lists failed or that could not delete a group that looked unused, backoff
	// later (MaxAge, doubling with each such collection in a row up to KeepNew times it);
	// after one that kept a group made lately, when that group stops being new (whichever
	// comes first).
	next    time.Time
	backoff time.Duration
	// collecting is true while a collection runs: one at a time.
	collecting bool
}

// entry is what is known about the group of one key.
type entry struct {
	// group is the group as the cloud last answered; nil when it has none.
	group *cloudapi.TargetGroup
	// read is the tick at which the list that found group began; 0 when group is the
	// cloud's answer to a write (no read: a write may be based on it only after a list
	// that begins later).
	read uint64
	// at is when the entry was learnt; an entry older than MaxAge is listed again.
	at time.Time
	// unsure is true after a failed call about the group: only the cloud knows.
	unsure bool
	// lists holds back the group's next list after a failed one, so that an outage of the
	// group API costs one list per backoff (internal/pace's Backoff), not one per call.
	lists pace.Backoff
	// created is when the Store created the group (or adopted it after a lost create);
	// see Deletable.
	created time.Time
}

// New returns a Store with a collection due: a predecessor may have left an unused group.
func New(cfg Config) *Store {
	return &Store{cfg: cfg, entries: map[string]*entry{}, known: map[string]map[string]string{}, users: map[string]int{}, due: true}
}

// Owned reports whether a target group with tags is one of the cluster's groups of Nodes,
// the only groups ccmkit writes or deletes: it carries cloudapi.TagCluster with
// clusterID (not empty) and cloudapi.TagTargetGroup (its key: a group of Nodes ccmkit
// made). A group of the cluster without the second is another's, made by hand or by
// other tools. It is the one rule of the Store's updates, deletes and collection, and of
// package sweeper's sweep of target groups.
func Owned(clusterID string, tags map[string]string) bool {
	return clusterID != "" && tags[cloudapi.TagCluster] == clusterID && tags[cloudapi.TagTargetGroup] != ""
}

// errNotOwned is matched by the error of a write that mayWrite refused.
var errNotOwned = errors.New("not this cluster's to write")

// mayWrite is the check every update and delete of a group passes, given its tags as
// last read (Owned): anything else is refused before any call.
func (s *Store) mayWrite(id string, tags map[string]string) error {
	if Owned(s.cfg.ClusterID, tags) {
		return nil
	}
	return fmt.Errorf("target group %s does not carry tags %s=%s and %s: %w", id, cloudapi.TagCluster, s.cfg.ClusterID, cloudapi.TagTargetGroup, errNotOwned)
}

// name is the cloud name of the cluster's group of key k: NamePrefix, "-nodes-", and a
// hash of the cluster ID and the key, unique per cluster and key, stable and within 63
// characters.
func (s *Store) name(k string) string {
	sum := sha256.Sum256([]byte(s.cfg.ClusterID + "\x00" + k))
	return s.cfg.NamePrefix + "-nodes-" + hex.EncodeToString(sum[:8])
}

// tags are the tags that make a group the cluster's group of key k.
func (s *Store) tags(k string) map[string]string {
	return map[string]string{cloudapi.TagCluster: s.cfg.ClusterID, cloudapi.TagTargetGroup: k}
}

// forgetKey marks the group of key k unknown after a failed call about it.
func (s *Store) forgetKey(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[k]; e != nil {
		e.unsure = true
	}
}

// Forget marks the group with ID id unknown: a load balancer write naming it was
// refused, perhaps because it is gone. An empty id is none.
func (s *Store) Forget(id string) {
	if s == nil || id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if e.group != nil && e.group.ID == id {
			e.unsure = true
		}
	}
}

// Due records that a group of the cluster may be unused, for the next collection: a
// delete of a group or of a load balancer naming one failed, a call that chose a group
// failed, a load balancer that named a group is gone, or a load balancer named a group
// the Store did not know.
func (s *Store) Due() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.due = true
	s.mu.Unlock()
}
