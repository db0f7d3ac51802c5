package adapter

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/provider"
)

// ProviderName is the provider's name (--cloud-provider) and the scheme of its provider
// IDs, hcloud://<server ID>.
const ProviderName = "hcloud"

func init() {
	provider.Register(ProviderName, provider.Backend[Config]{
		Name: ProviderName, New: func(cfg *provider.Config, section Config) (cloudapi.Client, error) {
			if cfg.Credentials.Token == "" {
				return nil, errors.New("credentials: the Hetzner Cloud API needs a token")
			}
			return New(section.Endpoint, cfg.Credentials.Token, nil).WithNetwork(section.Network), nil
		},
	}, provider.Options{})
}

// Config is the `hcloud:` section of the cloud config.
type Config struct {
	// Endpoint is the API's base URL (YAML "endpoint"); empty means the SDK's default,
	// https://api.hetzner.cloud/v1.
	Endpoint string `yaml:"endpoint"`
	// Network is the name or ID of the network whose routes carry the pod network (YAML
	// "network"); empty, the default, means no routes (Client.Routes answers false).
	Network string `yaml:"network"`
}

// Validate reports whether Endpoint is empty or an absolute http or https URL, and
// Network empty or a name or ID without surrounding white space.
func (c *Config) Validate() error {
	var errs []error
	if u, err := url.Parse(c.Endpoint); c.Endpoint != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		errs = append(errs, fmt.Errorf("endpoint: %q is not an absolute http(s) URL", c.Endpoint))
	}
	if c.Network != strings.TrimSpace(c.Network) {
		errs = append(errs, fmt.Errorf("network: %q has surrounding white space", c.Network))
	}
	return errors.Join(errs...)
}

// Client is a cloudapi.Client of the Hetzner Cloud API. It is safe for concurrent use.
type Client struct {
	api     *hcloud.Client
	network string // the routes' network; empty: none
}

// New returns a client of the API at endpoint (empty: the SDK's default) that
// authenticates with token and sends its requests with hc (nil: the SDK's default). The
// SDK retries nothing: ccmkit's decorator does. It makes no request.
func New(endpoint string, token provider.Secret, hc *http.Client) *Client {
	opts := []hcloud.ClientOption{
		hcloud.WithToken(token.Reveal()),
		hcloud.WithApplication("ccmkit", ""),
		hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}),
	}
	if endpoint != "" {
		opts = append(opts, hcloud.WithEndpoint(endpoint))
	}
	if hc != nil {
		opts = append(opts, hcloud.WithHTTPClient(hc))
	}
	return &Client{api: hcloud.NewClient(opts...)}
}

// Instances returns the instance API, over the project's servers.
func (c *Client) Instances() cloudapi.InstanceAPI { return instances{c.api} }

// LoadBalancers answers (nil, false): Hetzner's load balancers are not mapped yet.
func (c *Client) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) { return nil, false }

// WithNetwork returns a copy of c whose Routes are those of the network with the given
// name or ID; empty means none.
func (c *Client) WithNetwork(network string) *Client {
	cp := *c
	cp.network = network
	return &cp
}

// Routes returns the routes of the network WithNetwork named (a cloudapi.TaglessRouteAPI),
// or (nil, false) without one.
func (c *Client) Routes() (cloudapi.RouteAPI, bool) {
	if c.network == "" {
		return nil, false
	}
	return routes{c.api, c.network}, true
}

// errorOf maps an SDK error onto cloudapi's sentinels, keeping it as the cause:
//
//	rate_limit_exceeded                      ErrThrottled, RetryAfter until RateLimit-Reset
//	not_found (from a list)                  ErrTransient (GetInstance reads it first)
//	uniqueness_error                         ErrConflict
//	locked, conflict, and the API's 5xx      ErrTransient: temporary, the same call may succeed
//	invalid_input, unauthorized, forbidden,  ErrInvalidRequest
//	  and any other typed error
//	an answer that is not the API's error    ErrInvalidRequest for a 4xx (a wrong endpoint,
//	                                         a proxy), ErrTransient for a 5xx
//	no answer (transport, context)           ErrTransient
func errorOf(op cloudapi.Operation, id string, resp *hcloud.Response, err error) error {
	var apiErr hcloud.Error
	switch {
	case hcloud.IsError(err, hcloud.ErrorCodeRateLimitExceeded):
		e := cloudapi.Throttled(op, 0, err)
		if resp != nil && !resp.Meta.Ratelimit.Reset.IsZero() {
			e.RetryAfter = max(time.Until(resp.Meta.Ratelimit.Reset), time.Second)
		}
		e.ID = id
		return e
	case hcloud.IsError(err, hcloud.ErrorCodeUniquenessError):
		return cloudapi.NewError(cloudapi.ErrConflict, op, id, err)
	case hcloud.IsError(err, hcloud.ErrorCodeNotFound, hcloud.ErrorCodeLocked, hcloud.ErrorCodeConflict,
		hcloud.ErrorCodeServiceError, hcloud.ErrorCodeUnknownError, hcloud.ErrorCodeServerError,
		hcloud.ErrorCodeBadGateway, hcloud.ErrorCodeTimeout, hcloud.ErrorCodeMaintenance,
		hcloud.ErrorCodeResourceUnavailable, hcloud.ErrorCodeRobotUnavailable):
		return cloudapi.NewError(cloudapi.ErrTransient, op, id, err)
	case errors.As(err, &apiErr):
		return cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, err)
	case errors.Is(err, hcloud.ErrStatusCode) && resp != nil && resp.StatusCode < 500:
		return cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id,
			fmt.Errorf("%w: not the API's error: check the endpoint's base URL", err))
	}
	return cloudapi.NewError(cloudapi.ErrTransient, op, id, err)
}
