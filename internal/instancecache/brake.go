package instancecache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Brake bounds how many instances may read as gone, so that a cloud answering "gone" for
// the whole cluster (credentials or a project switched) cannot have the node lifecycle
// controller delete every NotReady Node. The rule is the package documentation's
// ("The deletion brake"). The zero Brake is off.
type Brake struct {
	// Window is the time over which gone answers are counted; zero turns the brake off.
	Window time.Duration
	// Share is the share of the known instances (the most any list begun within the
	// window had live) that may read as gone within the window; in (0, 1].
	Share float64
	// Minimum is how many instances may read as gone within the window whatever Share of
	// the known instances is, so that small clusters scale down; at least 0.
	Minimum int
}

// The defaults of the brake that the provider's cloud config applies; the package
// documentation says why these.
const (
	// DefaultBrakeWindow is the brake's default Window.
	DefaultBrakeWindow = 10 * time.Minute
	// DefaultBrakeShare is the brake's default Share.
	DefaultBrakeShare = 0.5
	// DefaultBrakeMinimum is the brake's default Minimum.
	DefaultBrakeMinimum = 2
)

// ErrBrake is matched (errors.Is) by the error of a lookup that the cloud answered "gone"
// (not found, or terminated) while the deletion brake holds such answers back. It never
// matches cloudapi.ErrNotFound: the instance must not read as gone. The error is a
// *BrakeError.
var ErrBrake = errors.New("the deletion brake holds the cloud's answer that the instance is gone")

// BrakeError is the error of a lookup whose answer "gone" the brake refused.
type BrakeError struct {
	// Instance is the instance ID looked up, or the Node name of a lookup by name.
	Instance string
	// Engaged is true when the brake refuses every answer "gone" (a list had none of the
	// instances live that the list before had: another project, or no instance at all);
	// false when this window's allowance, Allowed, is spent.
	Engaged bool
	// Allowed is how many instances may read as gone within the window.
	Allowed int
	// Window is the brake's window.
	Window time.Duration
	// Report is true for the first refusal of this instance within a window to a Node's
	// read (ByIDForNode, ByNameForNode): the one to tell the operator about (an event on
	// the Node), so that a lookup repeated every few seconds is not an event storm. It is
	// false for every other read, which takes no report from the Node.
	Report bool
	// answer is the cloud's answer, quoted.
	answer string
}

// Error says what the cloud answered and why it is held back.
func (e *BrakeError) Error() string {
	why := fmt.Sprintf("%d instances already read as gone within %s, the most the deletion brake allows", e.Allowed, e.Window)
	if e.Engaged {
		why = "the instance list has none of the instances live that it had before (another project or credentials?)"
	}
	return fmt.Sprintf("instance %q: %v: the cloud answered %q, but %s", e.Instance, ErrBrake, e.answer, why)
}

// Is reports whether target is ErrBrake.
func (e *BrakeError) Is(target error) bool { return target == ErrBrake }

// brakeState is the brake's memory. It is guarded by the Cache's mu.
type brakeState struct {
	// lists are the live counts of the lists begun within the last window, oldest first.
	lists []listedLive
	// passed holds the instances (ID, or "name:" and the name key) let go as gone within
	// the last window, with when.
	passed map[string]time.Time
	// reported holds when a refusal of an instance to a Node's read was last reported.
	reported map[string]time.Time
	// baseline is set while the brake is engaged: the instances live before the list that
	// engaged it. A list that has one of them live releases it.
	baseline map[string]bool
	// askedSince holds the IDs a Node's read by ID (ByIDForNode) looked up while the
	// brake is engaged: a list that has one of them live (a new Node's instance after a
	// node pool was replaced between two lists) shows the project is the cluster's, and
	// releases the brake too. No other read adds to it.
	askedSince map[string]bool
	engaged    bool
}

type listedLive struct {
	at   time.Time
	live int
}

// brakeLive returns the IDs of the instances live in the snapshot that a list must lose
// all of to engage the brake: those the last list had live, and those a GetInstance added
// for a Node's read by ID. An instance a GetInstance added for any other read is not one
// of them: it may be another project's (a route's target, looked up after a project
// switch and before the next list), and would keep that list from engaging the brake.
// c.mu is held.
func (c *Cache) brakeLive() map[string]bool {
	live := liveIDs(c.byID)
	for id := range c.fetched {
		if !c.nodeFetched[id] {
			delete(live, id)
		}
	}
	return live
}

// liveIDs returns the IDs of the instances of m that are not terminated.
func liveIDs(m map[string]*cloudapi.Instance) map[string]bool {
	out := make(map[string]bool, len(m))
	for id, inst := range m {
		if inst.State != cloudapi.InstanceTerminated {
			out[id] = true
		}
	}
	return out
}

// brakeOnList updates the brake with a list begun at started that is replacing the
// snapshot by next. c.mu is held.
func (c *Cache) brakeOnList(ctx context.Context, started time.Time, next map[string]*cloudapi.Instance) {
	b, s := c.opts.Brake, &c.brake
	if b.Window <= 0 {
		return
	}
	logger := klog.FromContext(ctx)
	live := liveIDs(next)
	s.lists = append(s.lists, listedLive{at: started, live: len(live)})
	s.prune(c.opts.Clock.Now().Add(-b.Window))
	if s.engaged {
		for id := range live {
			if s.baseline[id] || s.askedSince[id] || len(s.baseline) == 0 {
				s.engaged, s.baseline, s.askedSince = false, nil, nil
				logger.Info("The instance list has live an instance the cluster had before the deletion brake engaged, or has looked up since; instances may read as gone again", "instance", id)
				return
			}
		}
		return
	}
	before := c.brakeLive()
	switch {
	case c.byID == nil && len(live) > 0:
		return // the first list has instances
	case c.byID != nil && len(before) <= b.Minimum:
		return // so few were known live that Minimum lets them all go
	}
	for id := range before {
		if live[id] {
			return
		}
	}
	s.engaged, s.baseline, s.askedSince = true, before, map[string]bool{}
	logger.Info("The instance list has none of the instances live that the list before had; the deletion brake refuses every answer that an instance is gone until a list has them again or the operator acknowledges a Node's deletion",
		"before", len(before), "live", len(live))
}

// askedByID records, while the brake is engaged, that a Node's read looks up the instance
// id (see brakeState.askedSince).
func (c *Cache) askedByID(id string) {
	if c.opts.Brake.Window <= 0 {
		return
	}
	c.mu.RLock() // every lookup passes here: the write lock only while the brake is engaged
	engaged := c.brake.engaged
	c.mu.RUnlock()
	if !engaged {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brake.engaged {
		c.brake.askedSince[id] = true
	}
}

// nodeFound records that a Node's read by ID found inst, so that an instance a GetInstance
// added to the snapshot counts for the brake (see brakeLive).
func (c *Cache) nodeFound(inst *cloudapi.Instance) {
	if c.opts.Brake.Window <= 0 || inst == nil || inst.State == cloudapi.InstanceTerminated {
		return
	}
	c.mu.RLock() // every Node's read passes here: the write lock only for a fetched instance
	todo := c.fetched[inst.ID] && !c.nodeFetched[inst.ID]
	c.mu.RUnlock()
	if !todo {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fetched[inst.ID] { // not a list since
		if c.nodeFetched == nil {
			c.nodeFetched = map[string]bool{}
		}
		c.nodeFetched[inst.ID] = true
	}
}

// prune forgets what is not after since: the window is the time after since.
func (s *brakeState) prune(since time.Time) {
	i := 0
	for i < len(s.lists) && !s.lists[i].at.After(since) {
		i++
	}
	s.lists = s.lists[i:]
	for key, at := range s.passed {
		if !at.After(since) {
			delete(s.passed, key)
		}
	}
	for key, at := range s.reported {
		if !at.After(since) {
			delete(s.reported, key)
		}
	}
}

// allowed returns how many instances may read as gone within the window ending now. c.mu
// is held.
func (c *Cache) allowed() int {
	known := len(liveIDs(c.byID))
	for _, l := range c.brake.lists {
		known = max(known, l.live)
	}
	return max(c.opts.Brake.Minimum, int(math.Floor(c.opts.Brake.Share*float64(known))))
}

// braked passes a lookup's answer through the brake: an answer that the instance is gone
// (key names it: the ID, or "name:" and the name key; shown is what the error quotes) is
// returned as it is while the brake lets it go, and is a *BrakeError otherwise, reported
// (BrakeError.Report) only to a Node's read (forNode). Any other answer is returned as it
// is.
func (c *Cache) braked(ctx context.Context, key, shown string, inst *cloudapi.Instance, err error, forNode bool) (*cloudapi.Instance, error) {
	b := c.opts.Brake
	if b.Window <= 0 || !isGone(inst, err) {
		return inst, err
	}
	c.mu.Lock()
	s := &c.brake
	now := c.opts.Clock.Now()
	s.prune(now.Add(-b.Window))
	_, passed := s.passed[key]
	allowed := c.allowed()
	if !s.engaged && (passed || len(s.passed) < allowed) {
		if s.passed == nil {
			s.passed = map[string]time.Time{}
		}
		if !passed {
			s.passed[key] = now
		}
		c.mu.Unlock()
		return inst, err
	}
	report := false
	if _, reported := s.reported[key]; forNode && !reported {
		if s.reported == nil {
			s.reported = map[string]time.Time{}
		}
		s.reported[key] = now
		report = true
	}
	engaged := s.engaged
	c.mu.Unlock()

	answer := "terminated"
	if err != nil {
		answer = err.Error()
	}
	berr := &BrakeError{Instance: shown, Engaged: engaged, Allowed: allowed, Window: b.Window, Report: report, answer: answer}
	c.observe(CheckBrake, CheckRefused)
	klog.FromContext(ctx).V(2).Info("The deletion brake refuses an answer that an instance is gone", "instance", shown, "engaged", engaged, "allowed", allowed, "window", b.Window)
	return nil, berr
}

// isGone reports whether a lookup's answer says the instance is gone.
func isGone(inst *cloudapi.Instance, err error) bool {
	if err != nil {
		return cloudapi.IsNotFound(err)
	}
	return inst != nil && inst.State == cloudapi.InstanceTerminated
}
