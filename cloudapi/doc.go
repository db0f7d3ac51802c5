// Package cloudapi is the thin cloud API that ccmkit builds cloudprovider.Interface on.
//
// A cloud team implements Client for its cloud (an adapter) and registers it with the
// provider package; ccmkit does everything Kubernetes-specific above it: provider IDs,
// node addresses, Service-to-load-balancer translation, ownership, caching, retries, rate
// limiting and metrics. Nothing in this package mentions Kubernetes, so an adapter author
// needs to know only their own cloud.
//
// # Writing an adapter
//
// Map each method to one or two calls of the cloud's API:
//
//   - InstanceAPI: GetInstance is "describe one VM", ListInstances is "list VMs, one page".
//     Fill Instance.Addresses with every address the VM has (internal and external,
//     IPv4 and IPv6, host names); ccmkit orders them for the Node.
//   - LoadBalancerAPI: ListLoadBalancers must filter by tags (server-side if the cloud
//     can, else on the page), because ccmkit finds the load balancer of a Service by its
//     owner tags (TagCluster, TagService). A cloud that replaces a whole load balancer in
//     one call implements UpdateLoadBalancer with LoadBalancerUpdate.Spec; a cloud with
//     separate listener, target and setting calls makes only the calls it needs:
//     LoadBalancerShape.Update compares the load balancer it read with the spec and calls
//     one function per kind of change (LoadBalancerSteps) in a safe order, refusing a
//     change no function makes before any call; PartwiseLoadBalancers makes the whole
//     LoadBalancerAPI of such a cloud from its get, list, create, delete and steps (with
//     LastReads, an update based on the caller's fresh read costs its steps alone). A cloud that keeps the health check and
//     the PROXY protocol per listener declares it (LoadBalancerShape.PerListener: a change
//     rewrites every listener) and reports them with JoinListenerParts. A cloud that
//     reports a value of every setting for every load balancer (a type, a location)
//     records the settings asked for as tags (TagsWithSettingValues) and reports only those
//     (SettingValuesFromTags). The shape also declares the limits of the cloud's load
//     balancers (health check ranges, IPv6 only second, exclusive features, certificates
//     per listener: LoadBalancerShape.HealthCheckRanges, Exclusive, MaxCertificates), which
//     ccmkit's sync and admission policy and the contract suite read; a cloud with a
//     firewall per load balancer changes its source ranges in place
//     (LoadBalancerSteps.SourceRanges). ccmkit calls UpdateLoadBalancer only when
//     LoadBalancerUpdate.Changes is not empty. A part of the spec the cloud cannot build (a session affinity, an
//     application protocol or TLS termination it lacks) is refused with
//     ErrInvalidRequest, never left out: ccmkit then tells the Service's owner, where a
//     dropped setting would fail silently. Certificates are the cloud's own references,
//     passed through as the Service names them. A cloud whose load balancers are DNS
//     names reports them in LoadBalancer.Hostname.
//   - RouteAPI: routes of the pod network, tagged with TagCluster and TagNode. A cloud
//     whose routes carry no tags implements TaglessRouteAPI too (its doc says what
//     changes: IDs the adapter synthesizes, every route listed, targets read back); over
//     a table of one route per destination to a gateway address (Hetzner's networks,
//     OpenStack's routers), GatewayRoutes is that TaglessRouteAPI from the adapter's reads
//     and writes of the table, with the same IDs, targets and pages as every such cloud
//     (with Members and a GatewayHolders cache, a list reads the table and only the
//     holders it cannot answer from the addresses last read; with Listed, the first list
//     takes them from the adapter's own whole list of the instances).
//   - TargetGroupAPI (optional; offered by also implementing TargetGroupClient, found
//     with TargetGroups): a cloud whose load balancers send traffic to shared groups of
//     instances (GCE's instance groups, target groups or pools elsewhere) maps them here;
//     a load balancer names its group in LoadBalancerSpec.TargetGroup. Groups are found
//     by tags like load balancers (TagCluster), a group a load balancer names is never
//     deleted (ErrConflict), creates follow the same rules as a load balancer's. Zones
//     are the adapter's: one TargetGroup may stand for one cloud group per zone. ccmkit's
//     load balancers that want the same Nodes then share one group (tagged TagCluster
//     and TagTargetGroup), so a Node added is one group write, not one write per load
//     balancer; the contract suite checks it.
//   - Capabilities: return (nil, false) from Client.LoadBalancers or Client.Routes when
//     the cloud lacks them.
//   - Tags: store the tags ccmkit gives (its ownership tags, TagCluster and the others, and
//     any other, a user's) exactly and find resources by them (ListOptions.Tags). A cloud
//     whose labels cannot hold every key and value (Hetzner's: 63 characters of
//     [a-zA-Z0-9._-]; a Service's namespace/name has a "/", a Node name up to 253
//     characters) carries them with one codec: EncodeLabels(tags, HetznerLabelRules) on
//     writes, DecodeLabels(labels, rules) on reads (a label it leaves out is named in its
//     error, the other tags are kept), LabelSelector(opts.Tags, rules) for a list's filter.
//     A key or value the rules accept stays as it is; any other is encoded, a long value
//     split over several labels; decoding reads a tag only from exactly the labels encoding
//     writes for it, so a foreign or broken label never reads as a cluster's tag, and the
//     selector selects exactly the resources whose tags match. Another cloud's syntax is a
//     LabelRules value. A cloud whose tags are a set of plain strings (DigitalOcean's)
//     carries them with EncodeTagSet, DecodeTagSet and EncodeTagSetKeeping over the same
//     codec (TagSetRules), and one that writes them a call per tag with a TagWriter.
//
// Map every error onto one of the sentinels (ErrNotFound, ErrConflict, ErrThrottled,
// ErrInvalidRequest, ErrTransient), for example with NewError or Throttled, keeping the
// cloud's own error as the cause; ErrorCodes classifies the typed error codes of an API
// that has them, and what is not the API's answer. A cloud refuses an ID that is not of
// the kind it gives before a call (NumericID, CheckNumericID, CheckUUID, PrefixedID;
// PartwiseLoadBalancers.IDs does it for load balancers, RefChecks for a spec's targets
// and certificates, each of its kind). The one rule that matters most: return
// ErrNotFound only when the cloud says, with certainty, that the resource does not exist.
// A timeout or a 5xx is ErrTransient; reading it as "not found" makes Kubernetes delete
// a healthy Node.
//
// Only the API's own typed not-found answer is authoritative: over HTTP, a 404 whose body
// is the API's error with its not-found code (for example {"code": "not_found"}). A bare
// HTTP 404 may be a wrong base path or API version in the endpoint, or a proxy, load
// balancer or gateway in front of the API answering with its own page: then every call
// answers 404, and read as ErrNotFound it would make ccmkit delete every NotReady Node.
// Map such a 404 (empty, HTML, plain text, JSON without the not-found code) to
// ErrInvalidRequest, which is never "gone" and is not retried, with a message that names
// the cause ("404 Not Found: not the API's not-found error: check the endpoint's base
// URL"). The same holds for an SDK: trust its typed not-found error, not the HTTP status
// under it.
//
// # Answers that look like success
//
// No write may succeed on a redirect. Go's http.Client follows a 301, 302 or 303 answer to
// a POST, PUT or DELETE with a GET; an adapter that reads that GET's 200 as success
// "deletes" a load balancer behind an HTTP-to-HTTPS redirect while the cloud keeps it.
// Follow no redirect (CheckRedirect returning http.ErrUseLastResponse) and map any 3xx to
// ErrInvalidRequest naming its Location. Read every answer's body whole, up to a bound,
// the successful ones too, and check it is the one JSON value it claims to be: a longer
// answer, or one with data after its first JSON value, is an error (ErrTransient: a
// write's outcome is unknown), never decoded in part. An SDK does not do this for you:
// many look only at a write's status and close its body unread, or decode the first JSON
// value and ignore the rest, and take a proxy's 16 MiB page or {"action":{}}<html>... for
// success. GatedClient does all of it below the SDK, whatever the SDK reads.
// cloudapitest.RunMiddlebox checks the redirects and the bound from in front of the
// adapter's API.
//
// # Paging
//
// A page token continues after the last item of its page. An API that pages by page
// number (Hetzner's) cannot promise that: an item deleted before the next page is read
// shifts the later pages, so that listing misses an item (and one created before it,
// sorting earlier, repeats one). Such an adapter sorts every list by ID (ascending), makes
// the page token the next page's number (PageNumberRequest reads the page, its size and
// the label selector from ListOptions; PageToken makes the next token), and runs the
// contract suite with cloudapitest.WithPageNumbers. ccmkit stays safe with it: lists drop a repeated ID; an
// instance a list missed is checked with GetInstance before it reads as gone; a Service's
// load balancer is looked up by its owner tags (one short list) before anything is
// created, so a load balancer missed by a list of the cluster's is never made twice; the
// sweeper deletes only what a list showed.
//
// # When the cloud misbehaves anyway
//
// ccmkit does not rely on every adapter getting this right. A call answered with neither
// a result nor an error is a transient failure (outcome unknown), never a nil to follow.
// A list whose page tokens repeat or never end fails with an error. While the instance
// list fails, a GetInstance ErrNotFound is not read as "gone"; and when a list suddenly
// lacks a large share of the instances the list before had, each is checked with
// GetInstance before it reads as gone (package instances says how). A Retry-After is
// honoured up to a configurable cap.
//
// Do not retry, rate-limit or cache in the adapter: ccmkit wraps every client in one
// decorator that does that, and counts on seeing every call. Do honour the context's
// deadline and cancellation. A call that makes more than one request (a write answered
// with an asynchronous action that the adapter polls until it is done, an SDK reading
// pages by itself) passes each request through ccmkit's gate: Transport around the HTTP
// client's transport does it for every request (GatedClient for an SDK that takes an
// http.Client), Request for one; the polls then wait for
// the rate limiter and are counted (extra_requests_total) like calls, and the call's
// per-attempt timeout bounds them all. An action that fails, or whose wait ends before it
// does, may have changed the resource: answer ErrTransient, never ErrInvalidRequest.
//
// A cloud whose list neither sorts by ID nor filters by tag makes ccmkit's pages with
// SortedPage; one that answers a create at once and refuses changes while it builds waits
// with WaitReady; one whose errors differ only by status and message classifies them with
// ErrorCodes.Rules, and reads what its SDK drops of a failed answer with ErrorTransport and
// RecordFailures.
//
// Prove the adapter with the contract suite in package cloudapitest, which runs the whole
// behavioural contract of this package against a backend you construct; package fake is
// the reference backend that passes it. Package faultinject wraps any client (yours too)
// with injected errors, latency, throttling and ambiguous writes, to prove what sits above
// it survives a misbehaving cloud. Package cloudapimock has gomock mocks of every
// interface, for tests that need exact call sequences.
package cloudapi

//go:generate mockgen -typed -destination=cloudapimock/mocks.go -package=cloudapimock . Client,InstanceAPI,LoadBalancerAPI,RouteAPI,TargetGroupAPI,TargetGroupClient
