// Package adapter is ccmkit's adapter for Hetzner Cloud over its official SDK
// (github.com/hetznercloud/hcloud-go/v2): a cloudapi.Client over an *hcloud.Client,
// registered in init as the provider "hcloud" (provider IDs hcloud://<server ID>, the
// cloud config's `hcloud:` section with the API's endpoint, the token from the config's
// credentials).
//
// Instances, from the project's servers. GetInstance takes the
// server's numeric ID only: any other ID (a bare-metal server's "bm-...", a legacy one) is
// ErrInvalidRequest, never ErrNotFound, so that no Node is deleted for it. ListInstances
// pages by page number (the page token is the page's number in decimal), sorted by ID,
// at most 50 servers a page. Servers created or deleted between two page reads may shift
// the pages, so a list may repeat or miss a server: ccmkit's instance snapshot checks a
// server a list misses with GetInstance before it reads as gone. A Node gets what Hetzner's
// own CCM gave it: the location as region, its legacy datacenter as zone (Config.ZoneLabel),
// the label LabelProvidedBy (Options' NodeLabels), the server's name as Hostname and the
// public addresses of Config.AddressFamily. The config's keys may come from that CCM's
// environment variables (Env, Options' EnvFallbacks). A server's labels carry
// its tags through cloudapi's label codec (HetznerLabelRules); labels it leaves out are
// logged. Routes: those of the network the `hcloud:` section names (network), a
// cloudapi.TaglessRouteAPI (a route is a destination and a gateway, without labels; its ID
// is its destination, its target the server that holds the gateway, from the private IPs
// of the network's servers as last read: a cloudapi.GatewayRoutes with its cache, filled
// first from the status pass's list of every server when it came first); without
// a network Client.Routes answers (nil, false). Load balancers: the project's load balancers, a
// service per listener and a server target per Node, with the adapter's Shape (what
// Hetzner's load balancers do not keep or support), Settings (type, algorithm, location,
// network zone) and Aliases (the annotations of Hetzner's own CCM), a
// cloudapi.PartwiseLoadBalancers whose updates are one function per kind of call (the Shape
// declares the health check and PROXY protocol per service, so a change of either
// rewrites every service); every request, an action's polls included, passes through
// cloudapi.Transport, and each write waits for its action before the next, a failed
// action or poll being ErrTransient; an update is based on the load balancer as last
// listed or read when ccmkit's read is that one (cloudapi.LastReads), and one of targets
// alone is answered without a read (README.md has the details).
//
// Errors: the SDK's typed errors map onto cloudapi's sentinels (errorCodes has the table,
// a cloudapi.ErrorCodes); not_found is ErrNotFound only for a GET or DELETE of one server
// or load balancer; an answer that is not the API's typed error (a bare 404 from a proxy
// or a wrong endpoint, a 3xx) is ErrInvalidRequest, a 5xx ErrTransient. The SDK's own retries are off: ccmkit's client decorator retries, and
// sees every call.
package adapter
