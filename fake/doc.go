// Package fake is an in-memory cloud that implements cloudapi.Client: the backend of the
// built-in `ccmkit` provider (backend: fake), of ccmkit's own tests and of the tests of
// anyone who builds on ccmkit. It behaves like a real cloud as far as ccmkit can tell: it
// returns the same sentinel errors a well-behaved adapter returns, pages its lists,
// filters by tags, allocates load balancer addresses from pools and keeps new load
// balancers provisioning for a while. It passes the contract suite in
// cloudapi/cloudapitest.
//
// # Describing a cloud
//
// From Go:
//
//	cloud, err := fake.New(fake.Config{
//		Region:       "eu-1",
//		PageSize:     500,
//		Provisioning: fake.Provisioning{Reads: 2},
//		Instances: []fake.Instance{
//			{ID: "i-1", Name: "node-a", Zone: "eu-1a", Addresses: []fake.Address{{Type: cloudapi.AddressInternalIP, Address: "10.0.0.11"}}},
//		},
//	})
//
// From YAML, with ParseConfig, or as the `fake:` section of a ccmkit cloud config
// (testdata/cloud.yaml shows every key):
//
//	region: eu-1                  # region of instances that name none (default fake-1)
//	pageSize: 500                 # page size and page cap of every List (default 100)
//	routePageSize: 0              # page cap of ListRoutes; 0: the whole route table (default)
//	provisioning:
//	  reads: 2                    # reads that answer "provisioning" after a create (default 0)
//	  duration: 30s               # and time since the create, on the cloud's clock (default 0)
//	addressPools:                 # load balancer addresses (defaults: documentation ranges)
//	  public:   {ipv4: [203.0.113.0/24], ipv6: ["2001:db8:1::/64"]}
//	  internal: {ipv4: [10.100.0.0/16],  ipv6: ["fd00:100::/64"]}
//	hostnames:
//	  domain: lb.example.com      # load balancers get the hostname <id>.<domain> (default: none)
//	  withoutAddresses: false     # true: a hostname and no address, as AWS's (default false)
//	capabilities:
//	  loadBalancers: true         # false: LoadBalancers() answers (nil, false)
//	  routes: true                # false: Routes() answers (nil, false)
//	  tls: true                   # false: listeners that terminate TLS are refused
//	  http: true                  # false: HTTP and HTTPS listeners are refused
//	  targetGroups: false         # true: TargetGroups() offers target groups (default false)
//	  taglessRoutes: false        # true: routes carry no tags, as Hetzner's (default false)
//	instances:
//	  - id: i-0001                # required, unique
//	    name: node-a
//	    type: m5.large
//	    zone: eu-1a
//	    region: eu-1              # default: the cloud's region
//	    state: running            # pending, running, stopping, stopped, terminating, terminated, unknown
//	    addresses:                # InternalIP, ExternalIP, Hostname, InternalDNS, ExternalDNS
//	      - {type: InternalIP, address: 10.0.0.11}
//	    tags: {pool: default}
//	stateFile: cloud-state.json   # keep the cloud across restarts (default: none; see below)
//
// Decoding is strict: an unknown key is an error naming the key and its line. Validate
// reports every problem at once.
//
// # What it models
//
//   - Lists are ordered by ID and paged: a page holds at most PageSize items (also when
//     the caller asks for more), and its token continues after the page's last ID, so a
//     listing of a changing set never repeats an item. Routes are one route table: a
//     ListRoutes without a page size answers with all of them, unless RoutePageSize is set.
//   - Load balancer names are unique (ErrConflict), at most MaxNameLength characters, and
//     a spec is validated as a cloud would (ErrInvalidRequest): protocols, ports, duplicate
//     listeners, targets that are not instances, health checks, CIDRs, IP families,
//     session affinity (ClientIP with a timeout, or Cookie with a cookie name, a lifetime
//     and an HTTP or HTTPS listener, the timeout or lifetime from 1 s to
//     MaxSessionAffinityTimeout; or none without one), application protocols (TLS, HTTP,
//     HTTPS on TCP listeners only; certificates exactly on those that terminate TLS). Capabilities.TLS and
//     Capabilities.HTTP switched off refuse the listeners that need them, as a cloud of
//     network load balancers does.
//   - Adapter settings (LoadBalancerSpec.SettingValues): any setting with a non-empty name is
//     stored exactly as given, changed by an update, recorded in LoadBalancerHistory (the
//     spec, and the changed names in Changes and Actual) and kept in the state file.
//   - Every load balancer gets one address per IP family (IPv4 when it names none), from
//     the public or the internal pool, or the address it requested if that is free
//     (ErrConflict when it is taken, ErrInvalidRequest when it is outside the pools). A
//     pool's cursor only moves forward: a released address is not handed out again before
//     the rest of the pool has been. An exhausted pool answers ErrConflict.
//   - With Hostnames.Domain, every load balancer gets the hostname "<ID>.<domain>" at
//     its create; with Hostnames.WithoutAddresses, it gets no address at all (as on a
//     cloud whose load balancers are DNS names), and requested addresses are refused.
//   - A new load balancer is provisioning until Provisioning.Reads reads of it (Get, or a
//     List page holding it) and Provisioning.Duration have passed; updates keep its status.
//   - Updates replace the whole spec, like a cloud with one PUT; switching Internal in
//     place is ErrInvalidRequest. Each write is recorded (LoadBalancerHistory) with the
//     caller's Changes and the real difference, so a test can catch a stale diff.
//   - With Capabilities.TargetGroups (off unless set), the Cloud is a
//     cloudapi.TargetGroupClient: target groups with unique names (ErrConflict), members
//     that must be instances, paged lists by tag like the others; a load balancer names
//     one in LoadBalancerSpec.TargetGroup instead of having targets of its own (both, or
//     a group that does not exist, is ErrInvalidRequest), and a group a load balancer
//     names is not deleted (ErrConflict). Zones are not modelled: a group holds instances
//     of any zone. Without the capability, a spec that names a group is ErrInvalidRequest.
//     Inventory.Targets resolves a load balancer's targets through its group.
//   - Routes live in one table: a second route for a destination is ErrConflict; a route
//     whose target instance is deleted or terminated is reported as a blackhole. With
//     Capabilities.TaglessRoutes the routes carry no tags (cloudapi.TaglessRouteAPI).
//   - A call whose context is done fails with ErrTransient and changes nothing.
//   - Every call is counted per operation (Calls, ResetCalls), failed calls included.
//     Inventory lists everything with its tags without counting.
//
// Instances are changed behind the client's back, as people and autoscalers do, with
// AddInstance, SetInstanceState, SetInstanceAddresses and DeleteInstance.
//
// # Keeping the cloud across restarts: the state file
//
// New makes a cloud that lives as long as its process. Open, given a Config whose
// StateFile names a file (`stateFile:` in YAML; a relative path is relative to the
// process's working directory), keeps the cloud in that file, so that a restarted process
// finds its load balancers with their addresses. The built-in `ccmkit` provider opens its
// cloud this way.
//
//   - The file holds the instances, the load balancers (with their creation time and the
//     provisioning reads as of the last write), their names and addresses, the routes, each
//     address pool's cursor (so no address is handed out again before the rest of its pool
//     has been), the target groups (keys "targetGroups" and "targetGroupSeq", absent while
//     the cloud never had one, so such a file reads as before) and the ID sequences (so
//     no ID is reused). It does not hold the call
//     counts, nor LoadBalancerHistory, which is the writes of one Cloud since it was made.
//   - No file at the path: a new cloud, as the Config describes it, written there at once
//     (so a path that cannot be written fails Open). The directory must exist.
//   - A symbolic link at the path is followed: the file it names is the state file, each
//     write replaces that file and the link stays. A link that names no file is an error,
//     not a new cloud written through it: such a link most often points into a volume not
//     mounted yet, where a new, empty cloud would diverge from the one in the volume (set
//     stateFile to the target's path to start a new cloud there).
//   - A fake cloud's state file: that cloud. Anything else is an error that names the
//     file and what is wrong: an empty or truncated file, something that is not JSON, JSON
//     without the kind "ccmkit.io/fake-cloud-state", a newer format version, unknown
//     fields, inconsistent state. Such a file is never written over: Open never turns a
//     file it did not write, or cannot read, into an empty cloud.
//   - Instances: the Config's instances make a new cloud's instances. At a later start
//     the file's instances are the cloud's, and what the Config changed since the previous
//     start is applied on top: an instance added to the Config is added, one changed is
//     replaced by the Config's, one removed from it is removed. The others stay as the file
//     has them, so an instance stopped or deleted behind the client's back stays so, and
//     one added with AddInstance stays. An operator's edit of `instances:` thus takes
//     effect at the next start, and nothing else is undone by it.
//   - The rest of the Config (pools, page sizes, provisioning) is read from the Config at
//     every start. A load balancer keeps its addresses when the pools change; a pool
//     whose CIDRs changed so that its cursor's CIDR is gone starts from its beginning,
//     skipping the addresses in use.
//   - Every write (a create, update or delete of a load balancer or route, and the
//     instance changes above) is saved before it returns success: the whole state is
//     written to path+".tmp", synced, renamed over the file, and the directory synced, so
//     that after a crash or SIGKILL the file is the state before or after the write,
//     never a part. A write that cannot be saved fails with cloudapi.ErrTransient and is
//     undone (the cloud reads the file again on the next call); as after any lost
//     answer, the caller cannot tell whether it was made (it was, when only the sync of
//     the directory failed). At 1,000 load balancers a write costs about 10 ms on an
//     ordinary disk, most of it the two syncs, and 1 ms on tmpfs; without a state file
//     nothing is read or written.
//   - Several Clouds may share one file, in one process or several (replicas with the
//     file on a shared volume, a test process inspecting the cloud of a
//     cloud-controller-manager): each write holds an flock on path+".lock" from reading
//     the latest file to replacing it, and every call first reads the file again if
//     another Cloud replaced it since (Open waits at most 30 s for the lock, then fails
//     naming the file: only a hung process holds it that long). They are one cloud, like
//     the clients of a real one. Provisioning reads made through one Cloud are seen by the others with its
//     next write. Open them with the same Config: each Open applies the instance changes
//     of its Config since the previous Open of the file, by any process, so two Configs
//     would undo each other's. The file must be replaced only this way, never edited in
//     place while a Cloud uses it. Unix only (flock): elsewhere Open refuses a state
//     file.
//   - The file is the cloud: deleted while a Cloud uses it, every call fails with
//     ErrTransient until it is back; at the next start a missing file is a new, empty
//     cloud, whose load balancers a cloud-controller-manager creates again with new
//     addresses.
//
// # What it does not model
//
//   - Faults, latency and rate limits: wrap the cloud with cloudapi/faultinject, which
//     works around any client, this one included.
//   - Eventual consistency: a write is visible to the next read. Real clouds may answer a
//     list with a load balancer missing for seconds after its create; test that with
//     faultinject's scripted faults, not here.
//   - Quotas other than address pool size, per-account limits, and load balancers that
//     fail to provision (status error).
//   - Traffic: listeners, health checks and source ranges are stored, not enforced; targets
//     are not checked for health, and a deleted instance stays a target. Session affinity
//     and application protocols are stored, not applied.
//   - Certificates: a certificate reference is any ID without white space; there is no
//     certificate store, so a reference to a certificate that does not exist, has
//     expired or does not match the name is accepted.
//   - Hostnames in DNS: a load balancer's hostname resolves nowhere.
//   - Which adapter settings exist and their values: the fake declares none, so it keeps
//     every one and refuses none (a real cloud refuses a setting it lacks with
//     ErrInvalidRequest, and a value it does not offer); a setting has no effect, and one
//     that a real cloud can change only on a new load balancer is changed in place.
//   - Routes per VPC or route table: there is one table, keyed by destination.
//   - Persistence beyond one file on one machine's file system: a state file shared by
//     processes on different machines needs a shared file system whose flock works
//     across them (see above).
package fake
