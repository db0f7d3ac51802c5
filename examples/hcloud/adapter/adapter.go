package adapter

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/provider"
)

// ProviderName is the provider's name (--cloud-provider) and the scheme of its provider
// IDs, hcloud://<server ID>.
const ProviderName = "hcloud"

func init() {
	provider.Register(ProviderName, provider.Backend[Config]{
		Name: ProviderName, NeedsToken: true, New: func(cfg *provider.Config, section Config) (cloudapi.Client, error) {
			return New(section, cfg.Credentials.Token, nil), nil
		},
	}, Options())
}

// Client is a cloudapi.Client of the Hetzner Cloud API. It is safe for concurrent use.
type Client struct {
	api *hcloud.Client
	cfg Config
	lbs *cloudapi.LastReads[*hcloud.LoadBalancer] // the load balancers as last read, the base of an update
	ips *cloudapi.GatewayHolders                  // the private IPs of the network's servers as last read
	// walk records ListInstances' pages, for the route table's first list; nil without
	// a network.
	walk *serverWalk
}

// New returns a client of the API at cfg.Endpoint (empty: the SDK's default), configured
// by cfg, that authenticates with token and sends its requests with hc (nil: the SDK's
// default), each through cloudapi.Transport. The SDK retries nothing: ccmkit's decorator
// does. It makes no request.
func New(cfg Config, token provider.Secret, hc *http.Client) *Client {
	// Every request passes through ccmkit's gate (cloudapi.Transport): an action's polls
	// wait for the rate limiter and are counted like the call that started it.
	opts := []hcloud.ClientOption{
		hcloud.WithToken(token.Reveal()),
		hcloud.WithApplication("ccmkit", ""),
		hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}),
		hcloud.WithHTTPClient(cloudapi.GatedClient(hc)),
	}
	if cfg.Endpoint != "" {
		opts = append(opts, hcloud.WithEndpoint(cfg.Endpoint))
	}
	c := &Client{api: hcloud.NewClient(opts...), cfg: cfg, lbs: &cloudapi.LastReads[*hcloud.LoadBalancer]{}, ips: &cloudapi.GatewayHolders{}}
	if cfg.Network != "" { // the route table's, which alone asks for the walk
		c.walk = &serverWalk{}
	}
	return c
}

// Instances returns the instance API, over the project's servers.
func (c *Client) Instances() cloudapi.InstanceAPI { return instances{c.api, c.cfg, c.walk} }

// LoadBalancers returns the load balancer API, over the project's load balancers.
func (c *Client) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) { return c.loadBalancers(), true }

// Routes returns the routes of Config.Network (a cloudapi.TaglessRouteAPI), or (nil,
// false) without one.
func (c *Client) Routes() (cloudapi.RouteAPI, bool) {
	if c.cfg.Network == "" {
		return nil, false
	}
	return c.routes(), true
}

// network is the configured network, read by ID or name (one call). One that is not
// configured or does not exist is a configuration error (ErrInvalidRequest for op on id),
// never "not found": a list's not-found is no answer.
func (c *Client) network(ctx context.Context, op cloudapi.Operation, id string) (*hcloud.Network, error) {
	if c.cfg.Network == "" {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, errors.New("an internal load balancer needs the hcloud section's network"))
	}
	n, resp, err := c.api.Network.Get(ctx, c.cfg.Network)
	switch {
	case err != nil:
		return nil, errorOf(op, id, resp, err)
	case n == nil:
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id,
			fmt.Errorf("network %q does not exist: check the hcloud section's network", c.cfg.Network))
	}
	return n, nil
}

// wait maps the answer (resp, err) to a write of op, then waits for the action it
// started, polling through the SDK's action waiter (whose retries are off, as all the
// client's). An answer without an action, an action that ends in error, or a wait that
// ends before it does is ErrTransient: the write may have been applied or not.
func (c *Client) wait(ctx context.Context, op cloudapi.Operation, id string, action *hcloud.Action, resp *hcloud.Response, err error) error {
	switch {
	case err != nil:
		return errorOf(op, id, resp, err)
	case action == nil || action.ID == 0:
		return cloudapi.NewError(cloudapi.ErrTransient, op, id, errors.New("the API answered without an action"))
	}
	if err := c.api.Action.WaitFor(ctx, action); err != nil {
		return cloudapi.NewError(cloudapi.ErrTransient, op, id, fmt.Errorf("action %d (%s): %w", action.ID, action.Command, err))
	}
	return nil
}

// errorCodes are the classes of the API's error codes: not_found is transient, as any
// call but a GET of one resource may answer it (GetInstance and GetLoadBalancer read the
// SDK's nil answer to that GET as not-found, DeleteLoadBalancer the code of its one ID);
// locked, conflict and the API's 5xx are temporary, the same call may succeed.
var errorCodes = cloudapi.ErrorCodes[hcloud.ErrorCode]{
	Throttled: []hcloud.ErrorCode{hcloud.ErrorCodeRateLimitExceeded},
	Conflict:  []hcloud.ErrorCode{hcloud.ErrorCodeUniquenessError},
	Transient: []hcloud.ErrorCode{hcloud.ErrorCodeNotFound, hcloud.ErrorCodeLocked, hcloud.ErrorCodeConflict,
		hcloud.ErrorCodeServiceError, hcloud.ErrorCodeUnknownError, hcloud.ErrorCodeServerError,
		hcloud.ErrorCodeBadGateway, hcloud.ErrorCodeTimeout, hcloud.ErrorCodeMaintenance,
		hcloud.ErrorCodeResourceUnavailable, hcloud.ErrorCodeRobotUnavailable},
}

// errorOf maps an SDK error onto cloudapi's sentinels by its code (errorCodes; any other,
// such as invalid_input, unauthorized or forbidden, is invalid), keeping it as the cause:
// rate_limit_exceeded is throttled until RateLimit-Reset, and an answer that is not the
// API's error invalid for a 4xx (a wrong endpoint, a proxy), transient otherwise, as no
// answer is (cloudapi.ErrorCodes.Classify).
func errorOf(op cloudapi.Operation, id string, resp *hcloud.Response, err error) error {
	var apiErr hcloud.Error
	var r cloudapi.FailedRequest[hcloud.ErrorCode]
	if errors.As(err, &apiErr) {
		r.Code = apiErr.Code
	}
	if resp != nil && resp.Response != nil {
		r.Status, r.RetryAt = resp.StatusCode, resp.Meta.Ratelimit.Reset
	}
	return errorCodes.Classify(op, id, r, err)
}
