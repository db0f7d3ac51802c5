package adapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// maxPerPage is the most servers the API answers in one page.
const maxPerPage = 50

// instances is cloudapi.InstanceAPI over the project's servers.
type instances struct{ api *hcloud.Client }

// GetInstance returns the server with the numeric ID id. Any other ID is
// ErrInvalidRequest: it names no server of this API (a bare-metal "bm-..." one, another
// cloud's), which is not the certainty that it is gone.
func (in instances) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	n, ok := cloudapi.NumericID(id)
	if !ok {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, cloudapi.OpGetInstance, id,
			fmt.Errorf("%q is not a Hetzner Cloud server ID (a positive number)", id))
	}
	srv, resp, err := in.api.Server.GetByID(ctx, n)
	switch {
	case err != nil:
		return nil, errorOf(cloudapi.OpGetInstance, id, resp, err)
	case srv == nil: // the SDK's answer to the API's typed not_found
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, id, errors.New("no such server"))
	}
	inst := instanceOf(ctx, srv)
	return &inst, nil
}

// ListInstances returns one page of the servers that carry opts.Tags, by ID; the page
// token is the number of the page to read.
func (in instances) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	req, err := cloudapi.PageNumberRequest(cloudapi.OpListInstances, opts, cloudapi.HetznerLabelRules, maxPerPage)
	if err != nil {
		return nil, err
	}
	servers, resp, err := in.api.Server.List(ctx, hcloud.ServerListOpts{ListOpts: listOpts(req), Sort: []string{"id:asc"}})
	if err != nil {
		return nil, errorOf(cloudapi.OpListInstances, "", resp, err)
	}
	out := &cloudapi.InstancePage{Items: make([]cloudapi.Instance, 0, len(servers))}
	for _, srv := range servers {
		if inst := instanceOf(ctx, srv); cloudapi.MatchTags(inst.Tags, opts.Tags) {
			out.Items = append(out.Items, inst)
		}
	}
	out.NextPageToken = nextPage(resp, req.Page)
	return out, nil
}

// listOpts are the SDK's list options of a page request.
func listOpts(req cloudapi.PageRequest) hcloud.ListOpts {
	return hcloud.ListOpts{Page: req.Page, PerPage: req.PerPage, LabelSelector: req.Selector}
}

// nextPage is the token of the page after page, empty after the last.
func nextPage(resp *hcloud.Response, page int) string {
	if p := resp.Meta.Pagination; p != nil {
		return cloudapi.PageToken(page, p.NextPage)
	}
	return ""
}

// instanceOf is the instance of a server. Its tags are the labels the codec reads; a
// label it leaves out is logged.
func instanceOf(ctx context.Context, srv *hcloud.Server) cloudapi.Instance {
	inst := cloudapi.Instance{ID: strconv.FormatInt(srv.ID, 10), Name: srv.Name, State: stateOf(srv.Status)}
	if srv.ServerType != nil {
		inst.Type = srv.ServerType.Name
	}
	if srv.Location != nil {
		inst.Zone, inst.Region = srv.Location.Name, string(srv.Location.NetworkZone)
	}
	if ip := srv.PublicNet.IPv4.IP; ip != nil && !ip.IsUnspecified() {
		inst.Addresses = append(inst.Addresses, cloudapi.Address{Type: cloudapi.AddressExternalIP, Address: ip.String()})
	}
	if n := srv.PublicNet.IPv6.Network; n != nil && !n.IP.IsUnspecified() {
		ip := append(net.IP(nil), n.IP.To16()...) // the network's ::1, as Hetzner's own CCM reports
		ip[len(ip)-1] |= 1
		inst.Addresses = append(inst.Addresses, cloudapi.Address{Type: cloudapi.AddressExternalIP, Address: ip.String()})
	}
	for _, pn := range srv.PrivateNet {
		if pn.IP != nil && !pn.IP.IsUnspecified() {
			inst.Addresses = append(inst.Addresses, cloudapi.Address{Type: cloudapi.AddressInternalIP, Address: pn.IP.String()})
		}
	}
	tags, err := cloudapi.DecodeLabels(srv.Labels, cloudapi.HetznerLabelRules)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Server labels left out of its tags", "server", inst.ID, "err", err)
	}
	inst.Tags = tags
	return inst
}

// stateOf maps a server's status: starting, initializing and rebuilding servers are
// pending, migrating ones run (they are moved live), deleting ones terminate; a status
// the API adds later is unknown (exists, not shut down).
func stateOf(s hcloud.ServerStatus) cloudapi.InstanceState {
	switch s {
	case hcloud.ServerStatusRunning, hcloud.ServerStatusMigrating:
		return cloudapi.InstanceRunning
	case hcloud.ServerStatusInitializing, hcloud.ServerStatusStarting, hcloud.ServerStatusRebuilding:
		return cloudapi.InstancePending
	case hcloud.ServerStatusStopping:
		return cloudapi.InstanceStopping
	case hcloud.ServerStatusOff:
		return cloudapi.InstanceStopped
	case hcloud.ServerStatusDeleting:
		return cloudapi.InstanceTerminating
	}
	return cloudapi.InstanceUnknown
}
