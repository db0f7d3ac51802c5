package adapter

import (
	"strconv"
	"sync"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

// serverWalk records the private IPs of the servers that ListInstances' pages answer, for
// the route table's first list (cloudapi.GatewayRoutes' Listed): ccmkit's instance
// snapshot lists every server from the first page to the last, and the route list of a
// process that just started needs the same servers' private IPs, which would be a second
// list of every server (at 5,000 servers, 100 requests of Hetzner's 3,600 an hour). A
// walk counts only when it read the pages in order from the first to the last, at one
// page size: a first page begins a walk anew, a page out of that order (another list of
// every server beside it) ends the walk in progress unused, a page that failed changes
// nothing (a retry of it goes on), and a list with a label selector is another list.
// Each complete walk replaces the one before; once the route table asked (listed), it
// records nothing more. A nil serverWalk (no network) records nothing. It is safe for
// concurrent use.
type serverWalk struct {
	mu      sync.Mutex
	asked   bool
	next    int                                  // the page the walk in progress reads next; 0: none in progress
	perPage int                                  // its page size
	seen    map[string][]hcloud.ServerPrivateNet // the walk in progress's servers' private networks, by server ID
	done    map[string][]hcloud.ServerPrivateNet // the last complete walk's
}

// page records the answer to the page request o of the server list: its servers, and
// whether it was the last page.
func (w *serverWalk) page(o hcloud.ListOpts, servers []*hcloud.Server, last bool) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.asked || o.LabelSelector != "":
		return // a selected list is another list
	case o.Page == 1:
		w.next, w.perPage, w.seen = 1, o.PerPage, map[string][]hcloud.ServerPrivateNet{}
	case o.Page != w.next || o.PerPage != w.perPage:
		w.next, w.seen = 0, nil
		return
	}
	for _, srv := range servers {
		w.seen[strconv.FormatInt(srv.ID, 10)] = srv.PrivateNet
	}
	w.next++
	if last {
		w.done, w.next, w.seen = w.seen, 0, nil
	}
}

// listed returns the private IP in network n of each server of the last complete walk,
// by server ID, and true; false without one. It ends the recording: the route table asks
// while its cache is empty (its first list with routes), once.
func (w *serverWalk) listed(n *hcloud.Network) (map[string]string, bool) {
	if w == nil {
		return nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	done := w.done
	w.asked, w.next, w.seen, w.done = true, 0, nil, nil
	if done == nil {
		return nil, false
	}
	ips := make(map[string]string, len(done))
	for id, nets := range done {
		if ip := privateIP(&hcloud.Server{PrivateNet: nets}, n); ip != "" {
			ips[id] = ip
		}
	}
	return ips, true
}
