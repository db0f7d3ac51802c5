package fake_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapitest"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
)

// newContractCloud returns a NewBackend that builds a fake from cfg holding the
// fixture's instances, handed to the suite through wrap.
func newContractCloud(cfg fake.Config, wrap func(*fake.Cloud) cloudapi.Client) cloudapitest.NewBackend {
	return func(t testing.TB, f cloudapitest.Fixture) cloudapi.Client {
		cloud, err := fake.New(cfg)
		require.NoError(t, err)
		for _, inst := range f.Instances {
			require.NoError(t, cloud.AddInstance(inst))
		}
		return wrap(cloud)
	}
}

func TestContract(t *testing.T) {
	plain := func(c *fake.Cloud) cloudapi.Client { return c }
	off := false
	for _, tc := range []struct {
		name    string
		backend cloudapitest.NewBackend
		opts    []cloudapitest.Option
	}{
		{"plain", newContractCloud(fake.Config{}, plain), nil},
		{"hostnames and addresses", newContractCloud(fake.Config{Hostnames: fake.Hostnames{Domain: "lb.example.com"}}, plain),
			[]cloudapitest.Option{cloudapitest.WithHostnames()}},
		{"hostnames without addresses", newContractCloud(fake.Config{Hostnames: fake.Hostnames{Domain: "lb.example.com", WithoutAddresses: true}}, plain),
			[]cloudapitest.Option{cloudapitest.WithoutAddresses()}},
		{"network load balancers only: no TLS, no HTTP", newContractCloud(fake.Config{Capabilities: fake.Capabilities{TLS: &off, HTTP: &off}}, plain), nil},
		{"provisioning 3 reads", newContractCloud(fake.Config{Provisioning: fake.Provisioning{Reads: 3}}, plain), nil},
		{"faultinject zero config", newContractCloud(fake.Config{}, func(c *fake.Cloud) cloudapi.Client {
			return faultinject.Wrap(c, faultinject.Config{})
		}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) { cloudapitest.Run(t, tc.backend, tc.opts...) })
	}
}
