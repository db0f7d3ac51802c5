package provider

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadConfigDefaults(t *testing.T) {
	cfg, err := ReadConfig(strings.NewReader("cluster:\n  id: prod-1\n"), "ccmkit")
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.Equal(t, "prod-1", cfg.Cluster.Name, "the name defaults to the ID")
	assert.Equal(t, float64(DefaultQPS), cfg.CloudAPI.QPS)
	assert.Equal(t, DefaultBurst, cfg.CloudAPI.Burst)
	assert.Equal(t, DefaultTimeout, cfg.CloudAPI.Timeout)
	assert.Equal(t, RetryConfig{MaxAttempts: DefaultMaxAttempts, InitialBackoff: DefaultInitialBackoff, MaxBackoff: DefaultMaxBackoff}, cfg.CloudAPI.Retry)
	assert.Equal(t, DefaultCacheMaxAge, cfg.Cache.MaxAge)
	assert.Equal(t, 5*time.Minute, cfg.CloudAPI.MaxRetryAfter)
	assert.True(t, cfg.InstancesEnabled())
	assert.True(t, cfg.LoadBalancersEnabled())
	assert.False(t, cfg.RoutesEnabled(), "routes are off unless asked for")
}

func TestReadConfigFull(t *testing.T) {
	const file = `
backend: fake
cluster: {id: prod-1, name: prod, master: api.prod.example.com}
region: eu-1
zone: eu-1a
cloudAPI:
  qps: 2.5
  burst: 5
  timeout: 10s
  retry: {maxAttempts: 6, initialBackoff: 1s, maxBackoff: 1m}
  maxRetryAfter: 90s
cache: {maxAge: 30s}
enable: {instances: true, loadBalancers: false, routes: true}
loadBalancer: {annotationPrefix: lb.example.com/}
fake:
  anything: here
`
	cfg, err := ReadConfig(strings.NewReader(file), "ccmkit")
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.Equal(t, ClusterConfig{ID: "prod-1", Name: "prod", Master: "api.prod.example.com"}, cfg.Cluster)
	assert.Equal(t, "eu-1a", cfg.Zone)
	assert.Equal(t, 2.5, cfg.CloudAPI.QPS)
	assert.Equal(t, time.Minute, cfg.CloudAPI.Retry.MaxBackoff)
	assert.Equal(t, 90*time.Second, cfg.CloudAPI.MaxRetryAfter)
	assert.Equal(t, 30*time.Second, cfg.Cache.MaxAge)
	assert.False(t, cfg.LoadBalancersEnabled())
	assert.True(t, cfg.RoutesEnabled())
	assert.Equal(t, "lb.example.com/", cfg.LoadBalancer.AnnotationPrefix)

	type fakeSection struct {
		Anything string `yaml:"anything"`
	}
	section, ok, err := Section[fakeSection](cfg, "fake")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "here", section.Anything)
	_, ok, err = Section[fakeSection](cfg, "other")
	require.NoError(t, err)
	assert.False(t, ok)
}

// TestConfigErrors is the table of bad cloud configs and the exact message an operator
// sees for each.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		{
			name: "not yaml",
			file: "cluster: [\n",
			want: []string{"cloud config: not valid YAML: yaml: line 1: did not find expected node content"},
		},
		{
			name: "not a mapping",
			file: "- a\n- b\n",
			want: []string{"cloud config: line 1: the cloud config must be a YAML mapping of keys to values"},
		},
		{
			name: "misspelt nested key",
			file: "cluster:\n  id: a\ncloudAPI:\n  qsp: 5\n",
			want: []string{`cloud config: line 4: unknown key "qsp" in cloudAPI (known keys: burst, maxRetryAfter, pageSize, qps, retry, timeout, unlimited)`},
		},
		{
			name: "wrong type",
			file: "cluster:\n  id: a\ncloudAPI:\n  burst: lots\n",
			want: []string{"line 4: cannot unmarshal !!str `lots` into int"},
		},
		{
			name: "bad duration",
			file: "cluster:\n  id: a\ncache:\n  maxAge: soon\n",
			want: []string{"line 4: cannot unmarshal !!str `soon` into time.Duration"},
		},
		{
			name: "misspelt top-level key",
			file: "backend: fake\ncluster:\n  id: a\nregoin: eu\n",
			want: []string{`line 4: unknown key "regoin" at the top level (the backend section is "fake"; known keys: backend, cache, cloudAPI, cluster, credentials, enable, loadBalancer, nodes, region, zone)`},
		},
		{
			name: "every problem at once",
			file: "backend: fake\ncluster:\n  id: 'bad id!'\ncloudAPI:\n  qps: -1\n  maxRetryAfter: -1s\n  retry: {initialBackoff: 1m, maxBackoff: 1s}\ncache: {maxAge: -1s}\nloadBalancer: {annotationPrefix: Not_A_Domain}\n",
			want: []string{
				`cluster.id: "bad id!" must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`,
				"cloudAPI.qps: -1 must be a finite number of calls per second of at least 0.001 (unset: the default 10; no client-side limit: cloudAPI.unlimited: true)",
				"cloudAPI.retry.initialBackoff: 1m0s is longer than cloudAPI.retry.maxBackoff 1s",
				"cloudAPI.maxRetryAfter: -1s must be positive",
				"cache.maxAge: -1s must be positive",
				`loadBalancer.annotationPrefix: "Not_A_Domain" must be a DNS subdomain followed by one "/", like "loadbalancer.ccmkit.io/"`,
			},
		},
		{
			name: "nodes",
			file: "cluster: {id: a}\nnodes:\n  ipFamilies: [IPv4, IPv4]\n  additionalLabels: {'bad key!': x, example.com/ok: 'bad value!'}\n",
			want: []string{
				"nodes.ipFamilies: [IPv4 IPv4] must name each of IPv4 and IPv6 at most once",
				`nodes.additionalLabels: key "bad key!": name part must consist of alphanumeric characters`,
				`nodes.additionalLabels: value of "example.com/ok": a valid label must be an empty string or consist of alphanumeric characters`,
			},
		},
		{
			name: "annotation prefix not a subdomain",
			file: "cluster: {id: a}\nloadBalancer: {annotationPrefix: -bad.example.com/}\n",
			want: []string{`loadBalancer.annotationPrefix: "-bad.example.com/": a lowercase RFC 1123 subdomain`},
		},
		{
			name: "qps NaN",
			file: "cluster: {id: a}\ncloudAPI: {qps: .nan}\n",
			want: []string{"cloudAPI.qps: NaN must be a finite number of calls per second of at least 0.001"},
		},
		{
			name: "qps +Inf",
			file: "cluster: {id: a}\ncloudAPI: {qps: .inf}\n",
			want: []string{"cloudAPI.qps: +Inf must be a finite number of calls per second of at least 0.001 (unset: the default 10; no client-side limit: cloudAPI.unlimited: true)"},
		},
		{
			name: "qps -Inf",
			file: "cluster: {id: a}\ncloudAPI: {qps: -.inf}\n",
			want: []string{"cloudAPI.qps: -Inf must be a finite number"},
		},
		{
			name: "qps whose interval overflows",
			file: "cluster: {id: a}\ncloudAPI: {qps: 1e-11}\n",
			want: []string{"cloudAPI.qps: 1e-11 must be a finite number of calls per second of at least 0.001"},
		},
		{
			name: "qps below the minimum",
			file: "cluster: {id: a}\ncloudAPI: {qps: 0.0009}\n",
			want: []string{"cloudAPI.qps: 0.0009 must be a finite number of calls per second of at least 0.001"},
		},
		{
			name: "qps too small for a float64",
			file: "cluster: {id: a}\ncloudAPI:\n  qps: 1e-400\n",
			want: []string{"line 3: cloudAPI.qps: 1e-400 is too small to tell from 0"},
		},
		{
			name: "burst above the maximum",
			file: "cluster: {id: a}\ncloudAPI: {burst: 1000000}\n",
			want: []string{"cloudAPI.burst: 1000000 must be from 1 to 10000 (unset: the default 20)"},
		},
		{
			name: "burst that overflows int",
			file: "cluster: {id: a}\ncloudAPI:\n  burst: 99999999999999999999\n",
			want: []string{"line 3: cannot unmarshal"},
		},
		{
			name: "unlimited with a rate",
			file: "cluster: {id: a}\ncloudAPI: {unlimited: true, qps: 5}\n",
			want: []string{"cloudAPI.unlimited: true turns the client-side rate limit off; leave cloudAPI.qps and cloudAPI.burst unset"},
		},
		{
			name: "two credential sources",
			file: "cluster: {id: a}\ncredentials: {token: s3cr3t, tokenFile: /tmp/x}\n",
			want: []string{"cloud config: credentials: set by credentials.token and credentials.tokenFile: set exactly one"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ReadConfig(strings.NewReader(tt.file), "ccmkit")
			if err == nil {
				cfg.Backend = "fake"
				err = cfg.Validate()
			}
			require.Error(t, err)
			for _, want := range tt.want {
				assert.Contains(t, err.Error(), want)
			}
			assert.NotContains(t, err.Error(), "s3cr3t")
			if len(tt.want) > 1 {
				assert.Len(t, strings.Split(err.Error(), "\n"), len(tt.want), "one line per problem: %s", err)
			}
		})
	}
}

func TestUnlimited(t *testing.T) {
	cfg, err := ReadConfig(strings.NewReader("cluster: {id: a}\ncloudAPI: {unlimited: true}\n"), "ccmkit")
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.Zero(t, cfg.CloudAPI.QPS, "no default rate is filled in")
	assert.Zero(t, cfg.CloudAPI.Burst)
	_, err = New(*cfg, instancesOnly(), testOptions())
	require.NoError(t, err, "the client accepts no limit")
}

func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("  from-file\n"), 0o600))
	emptyFile := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(emptyFile, []byte("\n"), 0o600))

	tests := []struct {
		name    string
		file    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "none", file: "{}", want: ""},
		{name: "inline", file: "credentials: {token: inline-secret}", want: "inline-secret"},
		{name: "file", file: "credentials: {tokenFile: " + tokenFile + "}", want: "from-file"},
		{name: "env", file: "{}", env: map[string]string{"MY_CLOUD_CLOUD_TOKEN": "from-env"}, want: "from-env"},
		{name: "env file", file: "{}", env: map[string]string{"MY_CLOUD_CLOUD_TOKEN_FILE": tokenFile}, want: "from-file"},
		{name: "env and inline", file: "credentials: {token: inline-secret}", env: map[string]string{"MY_CLOUD_CLOUD_TOKEN": "from-env"},
			wantErr: "credentials: set by credentials.token and $MY_CLOUD_CLOUD_TOKEN: set exactly one"},
		{name: "missing file", file: "credentials: {tokenFile: " + filepath.Join(dir, "nope") + "}", wantErr: "credentials: reading token file"},
		{name: "empty file", file: "credentials: {tokenFile: " + emptyFile + "}", wantErr: "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg, err := ReadConfig(strings.NewReader(tt.file), "my-cloud")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				for _, secret := range []string{"from-env", "inline-secret", "from-file"} {
					assert.NotContains(t, err.Error(), secret)
				}
				if tt.name == "missing file" {
					assert.ErrorIs(t, err, fs.ErrNotExist)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg.Credentials.Token.Reveal())
		})
	}
}

func TestSecretNeverPrints(t *testing.T) {
	cfg, err := ReadConfig(strings.NewReader("cluster: {id: a}\ncredentials: {token: hunter2}\n"), "ccmkit")
	require.NoError(t, err)
	require.Equal(t, "hunter2", cfg.Credentials.Token.Reveal())
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%10s"} {
		out := fmt.Sprintf(verb, cfg)
		assert.NotContains(t, out, "hunter2", verb)
		out = fmt.Sprintf(verb, cfg.Credentials.Token)
		assert.NotContains(t, out, "hunter2", verb)
		assert.NotContains(t, out, fmt.Sprintf("%x", "hunter2"), verb)
	}
	assert.Contains(t, fmt.Sprintf("%+v", cfg.Credentials), "[redacted]")
	wrapped := fmt.Errorf("building client with %v: %w", cfg.Credentials, errors.New("boom"))
	assert.NotContains(t, wrapped.Error(), "hunter2")
	y, err := cfg.Credentials.Token.MarshalYAML()
	require.NoError(t, err)
	assert.Equal(t, "[redacted]", y)
	j, err := cfg.Credentials.Token.MarshalJSON()
	require.NoError(t, err)
	assert.JSONEq(t, `"[redacted]"`, string(j))
	assert.Empty(t, Secret("").String(), "an empty secret shows as empty, so a missing credential is visible")
}
