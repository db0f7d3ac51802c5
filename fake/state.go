package fake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// The header of a state file: a file whose kind is not StateFileKind is not a fake
// cloud's, and one whose version is newer than StateFileVersion was written by a newer
// ccmkit; both are refused.
const (
	// StateFileKind is the "kind" of every state file the fake writes.
	StateFileKind = "ccmkit.io/fake-cloud-state"
	// StateFileVersion is the format version this package reads and writes.
	StateFileVersion = 1
)

// stateDoc is the state file: the cloud's state as of its last acknowledged write. Its
// types are the file's own (not cloudapi's), so the format changes only on purpose.
type stateDoc struct {
	Kind    string `json:"kind"`
	Version int    `json:"version"`
	// ConfigInstances are the config's instances at the last start, so that a start with
	// a changed config can tell what the config changed (see mergeInstances).
	ConfigInstances []stateInstance `json:"configInstances"`
	Instances       []stateInstance `json:"instances"`
	LoadBalancers   []stateLB       `json:"loadBalancers"`
	// LoadBalancerSeq and RouteSeq are the last IDs handed out, so that no ID is reused.
	LoadBalancerSeq int          `json:"loadBalancerSeq"`
	Routes          []stateRoute `json:"routes"`
	RouteSeq        int          `json:"routeSeq"`
	// TargetGroups and TargetGroupSeq are the target groups (Capabilities.TargetGroups)
	// and the last group ID handed out; absent in a file without any.
	TargetGroups   []stateTargetGroup `json:"targetGroups,omitempty"`
	TargetGroupSeq int                `json:"targetGroupSeq,omitempty"`
	// AddressPools are the pools' cursors: the last address each pool handed out.
	AddressPools []stateCursor `json:"addressPools"`
}

type stateInstance struct {
	ID        string            `json:"id"`
	Name      string            `json:"name,omitempty"`
	Type      string            `json:"type,omitempty"`
	Zone      string            `json:"zone,omitempty"`
	Region    string            `json:"region,omitempty"`
	Addresses []stateAddress    `json:"addresses,omitempty"`
	State     string            `json:"state"`
	Tags      map[string]string `json:"tags,omitempty"`
}

type stateAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

type stateLB struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Internal      bool              `json:"internal,omitempty"`
	Listeners     []stateListener   `json:"listeners,omitempty"`
	Targets       []string          `json:"targets,omitempty"`
	TargetGroup   string            `json:"targetGroup,omitempty"`
	HealthCheck   *stateHealthCheck `json:"healthCheck,omitempty"`
	SourceRanges  []string          `json:"sourceRanges,omitempty"`
	ProxyProtocol bool              `json:"proxyProtocol,omitempty"`
	IPFamilies    []string          `json:"ipFamilies,omitempty"`
	RequestedIPs  []string          `json:"requestedIPs,omitempty"`
	Tags          map[string]string `json:"tags,omitempty"`
	// SessionAffinity, SessionAffinityTimeout (a Go duration) and
	// SessionAffinityCookieName are the spec's.
	SessionAffinity           string `json:"sessionAffinity,omitempty"`
	SessionAffinityTimeout    string `json:"sessionAffinityTimeout,omitempty"`
	SessionAffinityCookieName string `json:"sessionAffinityCookieName,omitempty"`
	// SettingValues are the adapter's settings, name to value.
	SettingValues map[string]string `json:"settings,omitempty"`
	Addresses     []string          `json:"addresses"`
	// Hostname is the DNS name the cloud gave the load balancer, if any.
	Hostname string `json:"hostname,omitempty"`
	Status   string `json:"status"`
	// Created and Reads are the provisioning clock: when it was created, and how many
	// reads answered "provisioning" as of the last write.
	Created time.Time `json:"created"`
	Reads   int       `json:"reads,omitempty"`
}

type stateListener struct {
	Name       string `json:"name,omitempty"`
	Protocol   string `json:"protocol"`
	Port       int32  `json:"port"`
	TargetPort int32  `json:"targetPort"`
	// AppProtocol and Certificates: TLS termination and HTTP, where the listener has them.
	AppProtocol  string   `json:"appProtocol,omitempty"`
	Certificates []string `json:"certificates,omitempty"`
	// HealthCheck is the listener's own health check, if any.
	HealthCheck *stateHealthCheck `json:"healthCheck,omitempty"`
}

type stateHealthCheck struct {
	Protocol           string `json:"protocol"`
	Port               int32  `json:"port,omitempty"`
	Path               string `json:"path,omitempty"`
	Interval           string `json:"interval,omitempty"`
	Timeout            string `json:"timeout,omitempty"`
	HealthyThreshold   int32  `json:"healthyThreshold,omitempty"`
	UnhealthyThreshold int32  `json:"unhealthyThreshold,omitempty"`
}

type stateRoute struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	DestinationCIDR  string            `json:"destinationCIDR"`
	TargetInstanceID string            `json:"targetInstanceID"`
	TargetAddress    string            `json:"targetAddress,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
}

type stateTargetGroup struct {
	ID      string            `json:"id"`
	Name    string            `json:"name"`
	Targets []string          `json:"targets,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
}

type stateCursor struct {
	Internal bool   `json:"internal,omitempty"`
	Family   string `json:"family"`
	// Prefix is the CIDR of the pool the cursor is in, and Last the address it handed
	// out last.
	Prefix string `json:"prefix"`
	Last   string `json:"last"`
}

// encodeState writes the cloud's state as a state file: stateDoc's JSON, assembled so
// that each load balancer is encoded once per change, not on every write. The caller
// holds mu (read) and netMu. sizeHint is the size of the last state written.
func (c *Cloud) encodeState(sizeHint int) ([]byte, error) {
	instances := make([]stateInstance, 0, c.instances.len())
	for _, id := range c.instances.ids {
		instances = append(instances, toStateInstance(c.instances.byID[id]))
	}
	routes := make([]stateRoute, 0, c.routes.len())
	for _, id := range c.routes.ids {
		r := c.routes.byID[id]
		routes = append(routes, stateRoute{
			ID: r.ID, Name: r.Name, DestinationCIDR: r.DestinationCIDR,
			TargetInstanceID: r.TargetInstanceID, TargetAddress: r.TargetAddress, Tags: nilIfEmpty(r.Tags),
		})
	}
	cursors := []stateCursor{}
	for _, key := range poolKeys {
		if p := c.pools[key]; p.last.IsValid() {
			cursors = append(cursors, stateCursor{
				Internal: key.internal, Family: string(key.family),
				Prefix: p.prefixes[p.idx].String(), Last: p.last.String(),
			})
		}
	}
	configInstances := c.configInstances
	if configInstances == nil {
		configInstances = []stateInstance{}
	}

	var buf bytes.Buffer
	buf.Grow(sizeHint + sizeHint/8)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	field := func(name string, v any) error {
		buf.WriteString(`,"` + name + `":`)
		return enc.Encode(v) // its newline is white space between tokens
	}
	buf.WriteString(`{"kind":"` + StateFileKind + `","version":` + strconv.Itoa(StateFileVersion))
	err := errors.Join(
		field("configInstances", configInstances),
		field("instances", instances),
		field("loadBalancerSeq", c.lbSeq),
		field("routes", routes),
		field("routeSeq", c.routeSeq),
		field("addressPools", cursors),
	)
	if c.groups.len() > 0 || c.groupSeq > 0 {
		groups := make([]stateTargetGroup, 0, c.groups.len())
		for _, id := range c.groups.ids {
			g := c.groups.byID[id]
			groups = append(groups, stateTargetGroup{ID: g.ID, Name: g.Spec.Name, Targets: g.Spec.Targets, Tags: nilIfEmpty(g.Spec.Tags)})
		}
		err = errors.Join(err, field("targetGroups", groups), field("targetGroupSeq", c.groupSeq))
	}
	if err != nil {
		return nil, err
	}
	buf.WriteString(`,"loadBalancers":[`)
	for i, id := range c.lbs.ids {
		rec := c.lbs.byID[id]
		if rec.saved == nil {
			data, err := json.Marshal(toStateLB(rec))
			if err != nil {
				return nil, err
			}
			rec.saved = data
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(rec.saved)
	}
	buf.WriteString("]}\n")
	return buf.Bytes(), nil
}

// poolKeys are the cloud's four address pools in the order the state file lists them.
var poolKeys = []poolKey{
	{false, cloudapi.IPv4}, {false, cloudapi.IPv6}, {true, cloudapi.IPv4}, {true, cloudapi.IPv6},
}

// decodeState parses a state file and checks that it is whole and consistent. Its errors
// say what is wrong without the file's name, which the caller adds.
func decodeState(data []byte) (*stateDoc, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the file is empty, not a fake cloud's state (a new cloud starts only where no file exists)")
	}
	var header struct {
		Kind    *string `json:"kind"`
		Version *int    `json:"version"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&header); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &syntax) && syntax.Offset >= int64(len(bytes.TrimRight(data, " \t\r\n"))):
			return nil, fmt.Errorf("the file ends in the middle of its JSON document (truncated?): %w", err)
		case errors.As(err, &typ) && typ.Field == "":
			return nil, fmt.Errorf("the file is JSON but not an object, so not a fake cloud's state: %w", err)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("the file's %q is not what a fake cloud's state file has there, so it is not one: %w", typ.Field, err)
		default:
			return nil, fmt.Errorf("the file is not JSON, so not a fake cloud's state file: %w", err)
		}
	}
	switch {
	case header.Kind == nil:
		return nil, fmt.Errorf("the file has no \"kind\": it is not a fake cloud's state file (whose kind is %q)", StateFileKind)
	case *header.Kind != StateFileKind:
		return nil, fmt.Errorf("the file's kind is %q, not %q: it is not a fake cloud's state file", *header.Kind, StateFileKind)
	case header.Version == nil:
		return nil, errors.New("the file has no \"version\"")
	case *header.Version > StateFileVersion:
		return nil, fmt.Errorf("the file is version %d of the state file format, newer than the version %d this ccmkit reads: use the ccmkit that wrote it", *header.Version, StateFileVersion)
	case *header.Version < 1:
		return nil, fmt.Errorf("the file's version %d is not a version of the state file format", *header.Version)
	}
	doc := &stateDoc{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(doc); err != nil {
		return nil, fmt.Errorf("the file does not decode as a version %d state file: %w", StateFileVersion, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("the file goes on after its JSON document")
	}
	if err := doc.validate(); err != nil {
		return nil, fmt.Errorf("the file's state is inconsistent: %w", err)
	}
	return doc, nil
}

// validate checks what the cloud relies on: unique IDs, names, addresses and
// destinations, IDs no later than their sequence, well-formed values.
func (d *stateDoc) validate() error {
	var errs []error
	checkInstances := func(what string, list []stateInstance) {
		seen := map[string]bool{}
		for i, in := range list {
			path := fmt.Sprintf("%s[%d]", what, i)
			switch {
			case in.ID == "":
				errs = append(errs, fmt.Errorf("%s: no id", path))
			case seen[in.ID]:
				errs = append(errs, fmt.Errorf("%s: id %q is listed twice", path, in.ID))
			}
			seen[in.ID] = true
			if !cloudapi.InstanceState(in.State).Valid() {
				errs = append(errs, fmt.Errorf("%s: state %q is not an instance state", path, in.State))
			}
			for j, a := range in.Addresses {
				if err := validateAddress(cloudapi.Address{Type: cloudapi.AddressType(a.Type), Address: a.Address}); err != nil {
					errs = append(errs, fmt.Errorf("%s.addresses[%d]: %w", path, j, err))
				}
			}
		}
	}
	checkInstances("configInstances", d.ConfigInstances)
	checkInstances("instances", d.Instances)

	ids, names, addrs := map[string]bool{}, map[string]bool{}, map[netip.Addr]bool{}
	for i, lb := range d.LoadBalancers {
		path := fmt.Sprintf("loadBalancers[%d]", i)
		if n, ok := seqOf(lb.ID, "lb-"); !ok || n > d.LoadBalancerSeq || ids[lb.ID] {
			errs = append(errs, fmt.Errorf("%s: id %q is not an unused lb-N with N at most loadBalancerSeq %d", path, lb.ID, d.LoadBalancerSeq))
		}
		ids[lb.ID] = true
		if lb.Name == "" || names[lb.Name] {
			errs = append(errs, fmt.Errorf("%s: name %q is empty or taken", path, lb.Name))
		}
		names[lb.Name] = true
		if len(lb.Addresses) == 0 && lb.Hostname == "" {
			errs = append(errs, fmt.Errorf("%s: neither an address nor a hostname", path))
		}
		if _, err := parseDuration(lb.SessionAffinityTimeout); err != nil {
			errs = append(errs, fmt.Errorf("%s.sessionAffinityTimeout: %w", path, err))
		}
		if _, ok := lb.SettingValues[""]; ok {
			errs = append(errs, fmt.Errorf("%s.settings: empty name", path))
		}
		for _, s := range lb.Addresses {
			a, err := netip.ParseAddr(s)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: address %q is not an IP address", path, s))
			case addrs[a]:
				errs = append(errs, fmt.Errorf("%s: address %s belongs to another load balancer too", path, a))
			}
			addrs[a] = true
		}
		if st := cloudapi.LoadBalancerStatus(lb.Status); st != cloudapi.LoadBalancerProvisioning && st != cloudapi.LoadBalancerActive {
			errs = append(errs, fmt.Errorf("%s: status %q is neither provisioning nor active", path, lb.Status))
		}
		if lb.Created.IsZero() || lb.Reads < 0 {
			errs = append(errs, fmt.Errorf("%s: no creation time, or negative reads", path))
		}
		checkHC := func(field string, hc *stateHealthCheck) {
			for _, s := range []string{hc.Interval, hc.Timeout} {
				if _, err := parseDuration(s); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", field, err))
				}
			}
		}
		if hc := lb.HealthCheck; hc != nil {
			checkHC(path+".healthCheck", hc)
		}
		for j, l := range lb.Listeners {
			if l.HealthCheck != nil {
				checkHC(fmt.Sprintf("%s.listeners[%d].healthCheck", path, j), l.HealthCheck)
			}
		}
	}
	groupIDs, groupNames := map[string]bool{}, map[string]bool{}
	for i, g := range d.TargetGroups {
		path := fmt.Sprintf("targetGroups[%d]", i)
		if n, ok := seqOf(g.ID, "tg-"); !ok || n > d.TargetGroupSeq || groupIDs[g.ID] {
			errs = append(errs, fmt.Errorf("%s: id %q is not an unused tg-N with N at most targetGroupSeq %d", path, g.ID, d.TargetGroupSeq))
		}
		groupIDs[g.ID] = true
		if g.Name == "" || groupNames[g.Name] {
			errs = append(errs, fmt.Errorf("%s: name %q is empty or taken", path, g.Name))
		}
		groupNames[g.Name] = true
	}
	for i, lb := range d.LoadBalancers {
		if lb.TargetGroup != "" && !groupIDs[lb.TargetGroup] {
			errs = append(errs, fmt.Errorf("loadBalancers[%d]: target group %q is not in targetGroups", i, lb.TargetGroup))
		}
	}
	ids, dsts := map[string]bool{}, map[netip.Prefix]bool{}
	for i, r := range d.Routes {
		path := fmt.Sprintf("routes[%d]", i)
		if n, ok := seqOf(r.ID, "r-"); !ok || n > d.RouteSeq || ids[r.ID] {
			errs = append(errs, fmt.Errorf("%s: id %q is not an unused r-N with N at most routeSeq %d", path, r.ID, d.RouteSeq))
		}
		ids[r.ID] = true
		dst, err := netip.ParsePrefix(r.DestinationCIDR)
		switch {
		case err != nil || dst.Masked() != dst:
			errs = append(errs, fmt.Errorf("%s: destination %q is not a canonical CIDR", path, r.DestinationCIDR))
		case dsts[dst]:
			errs = append(errs, fmt.Errorf("%s: a second route for %s", path, dst))
		}
		dsts[dst] = true
	}
	keys := map[poolKey]bool{}
	for i, cur := range d.AddressPools {
		path := fmt.Sprintf("addressPools[%d]", i)
		key := poolKey{cur.Internal, cloudapi.IPFamily(cur.Family)}
		pfx, perr := netip.ParsePrefix(cur.Prefix)
		last, lerr := netip.ParseAddr(cur.Last)
		switch {
		case !key.family.Valid() || keys[key]:
			errs = append(errs, fmt.Errorf("%s: family %q is not IPv4 or IPv6, or its pool is listed twice", path, cur.Family))
		case perr != nil || lerr != nil || !pfx.Contains(last) || familyOf(last) != key.family:
			errs = append(errs, fmt.Errorf("%s: %q is not an %s address in %q", path, cur.Last, key.family, cur.Prefix))
		}
		keys[key] = true
	}
	return errors.Join(errs...)
}

// seqOf returns N of an ID prefix+N.
func seqOf(id, prefix string) (int, bool) {
	s, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// applyState replaces the cloud's instances, load balancers, routes, sequences and pool
// cursors with those of doc, which decodeState checked. The history and the call counts
// stay. The caller holds mu and netMu.
func (c *Cloud) applyState(doc *stateDoc) {
	c.configInstances = doc.ConfigInstances
	c.instances = table[cloudapi.Instance]{}
	for _, in := range doc.Instances {
		c.instances.put(in.ID, fromStateInstance(in))
	}
	c.lbs = table[*loadBalancer]{}
	c.lbNames = make(map[string]string, len(doc.LoadBalancers))
	c.inUse = map[netip.Addr]string{}
	for _, s := range doc.LoadBalancers {
		rec := fromStateLB(s)
		c.lbs.put(rec.lb.ID, rec)
		c.lbNames[rec.lb.Spec.Name] = rec.lb.ID
		for _, a := range rec.lb.Addresses {
			c.inUse[netip.MustParseAddr(a)] = rec.lb.ID // validated
		}
	}
	c.lbSeq = doc.LoadBalancerSeq
	c.routes = table[cloudapi.Route]{}
	c.routeDst = make(map[netip.Prefix]string, len(doc.Routes))
	for _, s := range doc.Routes {
		r := cloudapi.Route{ID: s.ID, RouteSpec: cloudapi.RouteSpec{
			Name: s.Name, DestinationCIDR: s.DestinationCIDR, TargetInstanceID: s.TargetInstanceID,
			TargetAddress: s.TargetAddress, Tags: s.Tags,
		}}
		c.routes.put(r.ID, r)
		c.routeDst[netip.MustParsePrefix(s.DestinationCIDR)] = r.ID // validated
	}
	c.routeSeq = doc.RouteSeq
	c.groups = table[cloudapi.TargetGroup]{}
	for _, g := range doc.TargetGroups {
		c.groups.put(g.ID, cloudapi.TargetGroup{ID: g.ID, Spec: cloudapi.TargetGroupSpec{Name: g.Name, Targets: g.Targets, Tags: g.Tags}})
	}
	c.groupSeq = doc.TargetGroupSeq
	for _, p := range c.pools {
		p.idx, p.last = 0, netip.Addr{}
	}
	for _, cur := range doc.AddressPools {
		p := c.pools[poolKey{cur.Internal, cloudapi.IPFamily(cur.Family)}]
		// A cursor in a CIDR the pool no longer has starts the pool from its beginning.
		if i := slices.Index(p.prefixes, netip.MustParsePrefix(cur.Prefix)); i >= 0 {
			p.idx, p.last = i, netip.MustParseAddr(cur.Last)
		}
	}
}

// mergeInstances returns the instances of a cloud started with config over a state file
// whose instances are saved and whose config's instances at its last start were seed:
// each instance that config adds, changes or removes compared with seed is added,
// replaced or removed; every other instance is as saved, changes made behind the
// client's back included. changed reports whether the result differs from saved.
func mergeInstances(seed, saved, config []stateInstance) (merged []stateInstance, changed bool) {
	byID := func(list []stateInstance) map[string]stateInstance {
		m := make(map[string]stateInstance, len(list))
		for _, in := range list {
			m[in.ID] = in
		}
		return m
	}
	was, now := byID(seed), byID(config)
	out := byID(saved)
	for id, in := range now {
		if old, ok := was[id]; !ok || !reflect.DeepEqual(old, in) {
			if cur, ok := out[id]; !ok || !reflect.DeepEqual(cur, in) {
				out[id] = in
				changed = true
			}
		}
	}
	for id := range was {
		if _, kept := now[id]; !kept {
			if _, ok := out[id]; ok {
				delete(out, id)
				changed = true
			}
		}
	}
	merged = make([]stateInstance, 0, len(out))
	for _, in := range out {
		merged = append(merged, in)
	}
	slices.SortFunc(merged, func(a, b stateInstance) int { return strings.Compare(a.ID, b.ID) })
	return merged, changed
}

func toStateInstance(in cloudapi.Instance) stateInstance {
	out := stateInstance{
		ID: in.ID, Name: in.Name, Type: in.Type, Zone: in.Zone, Region: in.Region,
		State: string(in.State), Tags: nilIfEmpty(in.Tags),
	}
	for _, a := range in.Addresses {
		out.Addresses = append(out.Addresses, stateAddress{Type: string(a.Type), Address: a.Address})
	}
	return out
}

func fromStateInstance(in stateInstance) cloudapi.Instance {
	out := cloudapi.Instance{
		ID: in.ID, Name: in.Name, Type: in.Type, Zone: in.Zone, Region: in.Region,
		State: cloudapi.InstanceState(in.State), Tags: in.Tags,
	}
	for _, a := range in.Addresses {
		out.Addresses = append(out.Addresses, cloudapi.Address{Type: cloudapi.AddressType(a.Type), Address: a.Address})
	}
	return out
}

func toStateLB(rec *loadBalancer) stateLB {
	s := rec.lb.Spec
	out := stateLB{
		ID: rec.lb.ID, Name: s.Name, Internal: s.Internal, Targets: s.Targets, TargetGroup: s.TargetGroup,
		SourceRanges: s.SourceRanges, ProxyProtocol: s.ProxyProtocol,
		RequestedIPs: s.RequestedIPs, Tags: s.Tags, SettingValues: s.SettingValues,
		Addresses: rec.lb.Addresses, Status: string(rec.lb.Status), Created: rec.created, Reads: rec.reads,
		SessionAffinity: string(s.SessionAffinity), SessionAffinityTimeout: formatDuration(s.SessionAffinityTimeout),
		SessionAffinityCookieName: s.SessionAffinityCookieName,
		Hostname:                  rec.lb.Hostname,
	}
	for _, l := range s.Listeners {
		out.Listeners = append(out.Listeners, stateListener{Name: l.Name, Protocol: string(l.Protocol), Port: l.Port, TargetPort: l.TargetPort,
			AppProtocol: string(l.AppProtocol), Certificates: l.Certificates, HealthCheck: toStateHealthCheck(l.HealthCheck)})
	}
	for _, f := range s.IPFamilies {
		out.IPFamilies = append(out.IPFamilies, string(f))
	}
	out.HealthCheck = toStateHealthCheck(s.HealthCheck)
	return out
}

// toStateHealthCheck is hc as the state file keeps it; nil for nil.
func toStateHealthCheck(hc *cloudapi.HealthCheck) *stateHealthCheck {
	if hc == nil {
		return nil
	}
	return &stateHealthCheck{
		Protocol: string(hc.Protocol), Port: hc.Port, Path: hc.Path,
		Interval: formatDuration(hc.Interval), Timeout: formatDuration(hc.Timeout),
		HealthyThreshold: hc.HealthyThreshold, UnhealthyThreshold: hc.UnhealthyThreshold,
	}
}

// fromStateHealthCheck is the health check the state file keeps as hc, validated; nil for
// nil.
func fromStateHealthCheck(hc *stateHealthCheck) *cloudapi.HealthCheck {
	if hc == nil {
		return nil
	}
	interval, _ := parseDuration(hc.Interval) // validated
	timeout, _ := parseDuration(hc.Timeout)
	return &cloudapi.HealthCheck{
		Protocol: cloudapi.HealthCheckProtocol(hc.Protocol), Port: hc.Port, Path: hc.Path,
		Interval: interval, Timeout: timeout,
		HealthyThreshold: hc.HealthyThreshold, UnhealthyThreshold: hc.UnhealthyThreshold,
	}
}

func fromStateLB(s stateLB) *loadBalancer {
	spec := cloudapi.LoadBalancerSpec{
		Name: s.Name, Internal: s.Internal, Targets: s.Targets, TargetGroup: s.TargetGroup, SourceRanges: s.SourceRanges,
		ProxyProtocol: s.ProxyProtocol, RequestedIPs: s.RequestedIPs, Tags: s.Tags, SettingValues: s.SettingValues,
	}
	for _, l := range s.Listeners {
		spec.Listeners = append(spec.Listeners, cloudapi.Listener{Name: l.Name, Protocol: cloudapi.Protocol(l.Protocol), Port: l.Port, TargetPort: l.TargetPort,
			AppProtocol: cloudapi.AppProtocol(l.AppProtocol), Certificates: l.Certificates, HealthCheck: fromStateHealthCheck(l.HealthCheck)})
	}
	for _, f := range s.IPFamilies {
		spec.IPFamilies = append(spec.IPFamilies, cloudapi.IPFamily(f))
	}
	spec.SessionAffinity = cloudapi.SessionAffinity(s.SessionAffinity)
	spec.SessionAffinityTimeout, _ = parseDuration(s.SessionAffinityTimeout) // validated
	spec.SessionAffinityCookieName = s.SessionAffinityCookieName
	spec.HealthCheck = fromStateHealthCheck(s.HealthCheck)
	return &loadBalancer{
		lb: cloudapi.LoadBalancer{
			ID: s.ID, Spec: spec, Addresses: s.Addresses, Hostname: s.Hostname, Status: cloudapi.LoadBalancerStatus(s.Status),
		},
		created: s.Created,
		reads:   s.Reads,
	}
}

// formatDuration writes a duration as Go does ("1m30s"), and zero as nothing.
func formatDuration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return d, nil
}

// nilIfEmpty makes an empty map nil, as decoding a file that omits it does, so that an
// instance compares equal to itself read back.
func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
