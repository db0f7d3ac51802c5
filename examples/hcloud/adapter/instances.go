package adapter

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// maxPerPage is the most servers the API answers in one page.
const maxPerPage = 50

// instances is cloudapi.InstanceAPI over the project's servers, configured by cfg.
type instances struct {
	api  *hcloud.Client
	cfg  Config
	walk *serverWalk // records the pages of the servers' list, for the route table
}

// GetInstance returns the server with the numeric ID id. Any other ID is
// ErrInvalidRequest: it names no server of this API (a bare-metal "bm-..." one, another
// cloud's), which is not the certainty that it is gone.
func (in instances) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	srv, err := getByID(ctx, cloudapi.OpGetInstance, id, "server", cloudapi.ErrInvalidRequest, cloudapi.ErrNotFound, in.api.Server.GetByID)
	if err != nil {
		return nil, err
	}
	inst := in.instanceOf(ctx, srv)
	return &inst, nil
}

// ListInstances returns one page of the servers that carry opts.Tags, by ID; the page
// token is the number of the page to read. A list of every server, read from its first
// page to its last, is recorded for the route table's first list (serverWalk).
func (in instances) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	var req hcloud.ListOpts
	servers, next, err := page(cloudapi.OpListInstances, opts, func(o hcloud.ListOpts, sort []string) ([]*hcloud.Server, *hcloud.Response, error) {
		req = o
		return in.api.Server.List(ctx, hcloud.ServerListOpts{ListOpts: o, Sort: sort})
	})
	if err != nil {
		return nil, err
	}
	in.walk.page(req, servers, next == "")
	out := &cloudapi.InstancePage{Items: make([]cloudapi.Instance, 0, len(servers)), NextPageToken: next}
	for _, srv := range servers {
		if inst := in.instanceOf(ctx, srv); cloudapi.MatchTags(inst.Tags, opts.Tags) {
			out.Items = append(out.Items, inst)
		}
	}
	return out, nil
}

// getByID reads the resource what of the numeric ID id with get, an SDK's GetByID. An ID
// that is not a number names none, which is bad; nil, the SDK's answer to the API's typed
// not_found for one ID, is missing (each the caller's choice of sentinel: ErrNotFound
// where the cloud is certain that nothing of the ID exists, ErrInvalidRequest where the
// ID may name something outside this API).
func getByID[T any](ctx context.Context, op cloudapi.Operation, id, what string, bad, missing error,
	get func(context.Context, int64) (*T, *hcloud.Response, error)) (*T, error) {
	n, ok := cloudapi.NumericID(id)
	if !ok {
		return nil, cloudapi.NewError(bad, op, id, fmt.Errorf("%q is not a Hetzner Cloud %s ID (a positive number)", id, what))
	}
	v, resp, err := get(ctx, n)
	switch {
	case err != nil:
		return nil, errorOf(op, id, resp, err)
	case v == nil:
		return nil, cloudapi.NewError(missing, op, id, fmt.Errorf("%s %s does not exist", what, id))
	}
	return v, nil
}

// page reads one page of opts (by page number, filtered by a label selector) of a kind
// sorted by ID with list, the SDK's List of the kind, and the token of the next page.
func page[T any](op cloudapi.Operation, opts cloudapi.ListOptions,
	list func(o hcloud.ListOpts, sort []string) ([]T, *hcloud.Response, error)) ([]T, string, error) {
	req, err := cloudapi.PageNumberRequest(op, opts, cloudapi.HetznerLabelRules, maxPerPage)
	if err != nil {
		return nil, "", err
	}
	items, resp, err := list(hcloud.ListOpts{Page: req.Page, PerPage: req.PerPage, LabelSelector: req.Selector}, []string{"id:asc"})
	switch {
	case err != nil:
		return nil, "", errorOf(op, "", resp, err)
	case resp.Meta.Pagination == nil:
		return items, "", nil
	}
	return items, cloudapi.PageToken(req.Page, resp.Meta.Pagination.NextPage), nil
}

// instanceOf is the instance of a server, as Hetzner's own CCM gave it: the region its
// location, the zone its legacy datacenter (Config.zone), the public addresses of the
// configured family, the server's name as Hostname. Its tags are the labels the codec
// reads; a label it leaves out is logged.
func (in instances) instanceOf(ctx context.Context, srv *hcloud.Server) cloudapi.Instance {
	inst := cloudapi.Instance{ID: strconv.FormatInt(srv.ID, 10), Name: srv.Name, State: cmp.Or(states[srv.Status], cloudapi.InstanceUnknown)}
	if srv.ServerType != nil {
		inst.Type = srv.ServerType.Name
	}
	if srv.Location != nil {
		inst.Zone, inst.Region = in.cfg.zone(srv.Location.Name), srv.Location.Name
	}
	var v6 net.IP
	if n := srv.PublicNet.IPv6.Network; n != nil && !n.IP.IsUnspecified() {
		v6 = append(net.IP(nil), n.IP.To16()...) // the network's ::1, as Hetzner's own CCM reports
		v6[len(v6)-1] |= 1
	}
	inst.Addresses = cloudapi.IPAddresses(cloudapi.AddressExternalIP, in.cfg.publicIPs(srv.PublicNet.IPv4.IP, v6)...)
	for _, pn := range srv.PrivateNet {
		inst.Addresses = append(inst.Addresses, cloudapi.IPAddresses(cloudapi.AddressInternalIP, pn.IP)...)
	}
	inst.Addresses = append(inst.Addresses, hostname(srv.Name)...)
	tags, err := cloudapi.DecodeLabels(srv.Labels, cloudapi.HetznerLabelRules)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Server labels left out of its tags", "server", inst.ID, "err", err)
	}
	inst.Tags = tags
	return inst
}

// states map a server's status: starting, initializing and rebuilding servers are
// pending, migrating ones run (they are moved live), deleting ones terminate; a status
// missing here, one the API adds later, is unknown (exists, not shut down).
var states = map[hcloud.ServerStatus]cloudapi.InstanceState{
	hcloud.ServerStatusRunning: cloudapi.InstanceRunning, hcloud.ServerStatusMigrating: cloudapi.InstanceRunning,
	hcloud.ServerStatusInitializing: cloudapi.InstancePending, hcloud.ServerStatusStarting: cloudapi.InstancePending,
	hcloud.ServerStatusRebuilding: cloudapi.InstancePending, hcloud.ServerStatusStopping: cloudapi.InstanceStopping,
	hcloud.ServerStatusOff: cloudapi.InstanceStopped, hcloud.ServerStatusDeleting: cloudapi.InstanceTerminating,
}
