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
	assert.False(t, cfg.LoadBalancer.KeepOnDelete, "load balancers go with their Services unless asked")
	assert.Empty(t, cfg.LoadBalancer.Class, "no load balancer class unless asked for")
	assert.True(t, cfg.ServesUnclassed(), "Services without a class are served unless asked not to")
	assert.Equal(t, SweeperConfig{GracePeriod: DefaultSweeperGracePeriod, Interval: DefaultSweeperInterval}, cfg.Sweeper, "the sweeper is off unless asked for")
	assert.True(t, cfg.DeletionBrakeEnabled(), "the deletion brake is on unless switched off")
	assert.Equal(t, DeletionBrakeConfig{Window: DefaultDeletionBrakeWindow, Share: DefaultDeletionBrakeShare, Minimum: DefaultDeletionBrakeMinimum}, cfg.Nodes.DeletionBrake)
	assert.True(t, cfg.CreationBrakeEnabled(), "the creation brake is on unless switched off")
	assert.Equal(t, CreationBrakeConfig{Window: DefaultDeletionBrakeWindow, Share: DefaultDeletionBrakeShare, Minimum: DefaultDeletionBrakeMinimum}, cfg.LoadBalancer.CreationBrake,
		"the creation brake's defaults are the deletion brake's")
}

func TestReadConfigCreationBrake(t *testing.T) {
	cfg, err := ReadConfig(strings.NewReader("cluster: {id: a}\nloadBalancer:\n  creationBrake: {enabled: false, window: 30m, share: 0.25, minimum: 5}\n"), "ccmkit")
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.False(t, cfg.CreationBrakeEnabled())
	assert.Equal(t, CreationBrakeConfig{Enabled: cfg.LoadBalancer.CreationBrake.Enabled, Window: 30 * time.Minute, Share: 0.25, Minimum: 5}, cfg.LoadBalancer.CreationBrake)
}

func TestReadConfigDeletionBrake(t *testing.T) {
	cfg, err := ReadConfig(strings.NewReader("cluster: {id: a}\nnodes:\n  deletionBrake: {enabled: false, window: 30m, share: 0.25, minimum: 5}\n"), "ccmkit")
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.False(t, cfg.DeletionBrakeEnabled())
	assert.Equal(t, 30*time.Minute, cfg.Nodes.DeletionBrake.Window)
	assert.Equal(t, 0.25, cfg.Nodes.DeletionBrake.Share)
	assert.Equal(t, 5, cfg.Nodes.DeletionBrake.Minimum)
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
loadBalancer: {annotationPrefix: lb.example.com/, keepOnDelete: true, class: example.com/ccmkit, serveUnclassed: false}
nodes:
  additionalLabels: {example.com/pool: general}
  labelsFromTags: {team: example.com/team, cost-center: example.com/cost-center}
sweeper: {enabled: true, gracePeriod: 1h, interval: 2m}
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
	assert.True(t, cfg.LoadBalancer.KeepOnDelete)
	assert.Equal(t, map[string]string{"example.com/pool": "general"}, cfg.Nodes.AdditionalLabels)
	assert.Equal(t, map[string]string{"team": "example.com/team", "cost-center": "example.com/cost-center"}, cfg.Nodes.LabelsFromTags)
	assert.Equal(t, "example.com/ccmkit", cfg.LoadBalancer.Class)
	assert.False(t, cfg.ServesUnclassed())
	assert.Equal(t, SweeperConfig{Enabled: true, GracePeriod: time.Hour, Interval: 2 * time.Minute}, cfg.Sweeper)

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
			want: []string{`line 4: unknown key "regoin" at the top level (the backend section is "fake"; known keys: backend, cache, cloudAPI, cluster, credentials, enable, loadBalancer, nodes, region, routes, sweeper, zone)`},
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
			file: "cluster: {id: a}\nnodes:\n  ipFamilies: [IPv4, IPv4]\n  additionalLabels: {'bad key!': x, example.com/ok: 'bad value!', node.kubernetes.io/pool: a, example.com/team: b}\n" +
				"  labelsFromTags: {zone: topology.kubernetes.io/zone, team: example.com/team, Team: example.com/owner, owner: example.com/owner, '': example.com/x, size: 'Size!', cost: example.com/cost}\n",
			want: []string{
				"nodes.ipFamilies: [IPv4 IPv4] must name each of IPv4 and IPv6 at most once",
				`nodes.additionalLabels: key "bad key!": name part must consist of alphanumeric characters`,
				`nodes.additionalLabels: value of "example.com/ok": a valid label must be an empty string or consist of alphanumeric characters`,
				`nodes.additionalLabels: key "node.kubernetes.io/pool": it is under kubernetes.io, which Kubernetes reserves: use a prefix of your own`,
				`nodes.labelsFromTags: an empty tag key (mapped to label "example.com/x"): name the instance tag`,
				`nodes.labelsFromTags: label key "Size!" of tag "size": name part must consist of alphanumeric characters`,
				`nodes.labelsFromTags: tags "Team" and "owner" both map to label "example.com/owner": map each label from one tag`,
				`nodes.labelsFromTags: label "example.com/team" of tag "team" is an additional label too: set it in one place`,
				`nodes.labelsFromTags: label key "topology.kubernetes.io/zone" of tag "zone": it is under kubernetes.io, which Kubernetes reserves: use a prefix of your own`,
			},
		},
		{
			name: "deletion brake",
			file: "cluster: {id: a}\nnodes:\n  deletionBrake: {window: -1m, share: 1.5, minimum: -1}\n",
			want: []string{
				"nodes.deletionBrake.window: -1m0s must be positive",
				"nodes.deletionBrake.share: 1.5 must be more than 0 and at most 1 (0.5: half the known instances within a window; unset: the default 0.5)",
				"nodes.deletionBrake.minimum: -1 must not be negative (unset or 0: the default 2)",
			},
		},
		{
			name: "routes cluster CIDRs, every problem at once",
			file: "cluster: {id: a}\nroutes:\n  clusterCIDRs: [10.244.0.0/16, 10.244.1.0/24, 'fd00::1/64', '::/0', pods, 10.0.0.0/8]\n",
			want: []string{
				"routes.clusterCIDRs[1]: 10.244.1.0/24 overlaps routes.clusterCIDRs[0] 10.244.0.0/16",
				`routes.clusterCIDRs[2]: "fd00::1/64" has host bits set; the CIDR is fd00::/64`,
				`routes.clusterCIDRs[3]: "::/0" covers every address of its family: every route to a Node would be the cluster's`,
				`routes.clusterCIDRs[4]: "pods" is not a CIDR such as 10.244.0.0/16`,
				"routes.clusterCIDRs[5]: 10.0.0.0/8 overlaps routes.clusterCIDRs[0] 10.244.0.0/16",
				"routes.clusterCIDRs[5]: 10.0.0.0/8 overlaps routes.clusterCIDRs[1] 10.244.1.0/24",
			},
		},
		{
			name: "creation brake",
			file: "cluster: {id: a}\nloadBalancer:\n  creationBrake: {window: -1m, share: 1.5, minimum: -1}\n",
			want: []string{
				"loadBalancer.creationBrake.window: -1m0s must be positive",
				"loadBalancer.creationBrake.share: 1.5 must be more than 0 and at most 1 (0.5: half the load balancers of Services with an address within a window; unset: the default 0.5)",
				"loadBalancer.creationBrake.minimum: -1 must not be negative (unset or 0: the default 2)",
			},
		},
		{
			name: "deletion brake share NaN",
			file: "cluster: {id: a}\nnodes:\n  deletionBrake: {share: .nan}\n",
			want: []string{"nodes.deletionBrake.share: NaN must be more than 0 and at most 1"},
		},
		{
			name: "deletion brake misspelt",
			file: "cluster: {id: a}\nnodes:\n  deletionBrake: {windows: 1m}\n",
			want: []string{`unknown key "windows" in nodes.deletionBrake`},
		},
		{
			name: "annotation prefix not a subdomain",
			file: "cluster: {id: a}\nloadBalancer: {annotationPrefix: -bad.example.com/}\n",
			want: []string{`loadBalancer.annotationPrefix: "-bad.example.com/": a lowercase RFC 1123 subdomain`},
		},
		{
			name: "load balancer class not a label-style key",
			file: "cluster: {id: a}\nloadBalancer: {class: 'example.com/two/slashes'}\n",
			want: []string{`loadBalancer.class: "example.com/two/slashes": a valid label key must consist of alphanumeric characters`},
		},
		{
			name: "load balancer class with a bad prefix",
			file: "cluster: {id: a}\nloadBalancer: {class: 'Example_com/ccmkit'}\n",
			want: []string{`loadBalancer.class: "Example_com/ccmkit": prefix part a lowercase RFC 1123 subdomain`},
		},
		{
			name: "sweeper",
			file: "cluster: {id: a}\nsweeper: {enabled: true, gracePeriod: -1m, interval: -1s, every: 1m}\n",
			want: []string{`line 2: unknown key "every" in sweeper (known keys: enabled, gracePeriod, interval)`},
		},
		{
			name: "sweeper durations",
			file: "cluster: {id: a}\nsweeper: {enabled: true, gracePeriod: -1m, interval: -1s}\n",
			want: []string{"sweeper.gracePeriod: -1m0s must be positive", "sweeper.interval: -1s must be positive"},
		},
		{
			name: "serving no Service",
			file: "cluster: {id: a}\nloadBalancer: {serveUnclassed: false}\n",
			want: []string{"loadBalancer.serveUnclassed: false leaves ccmkit no Service to serve; set loadBalancer.class to the class it serves (or enable.loadBalancers: false)"},
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
	bigFile := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(bigFile, []byte(strings.Repeat("x", 64<<10+1)), 0o600))

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
		{name: "missing file", file: "credentials: {tokenFile: " + filepath.Join(dir, "nope") + "}", wantErr: "cloud config: credentials.tokenFile: cannot read the file named on line 1: no such file or directory"},
		{name: "empty file", file: "credentials: {tokenFile: " + emptyFile + "}", wantErr: "credentials.tokenFile: the file named on line 1 is empty"},
		{name: "env file missing", file: "{}", env: map[string]string{"MY_CLOUD_CLOUD_TOKEN_FILE": filepath.Join(dir, "nope")},
			wantErr: "cloud config: $MY_CLOUD_CLOUD_TOKEN_FILE: cannot read the file it names: no such file or directory"},
		{name: "too large", file: "credentials: {tokenFile: " + bigFile + "}", wantErr: "credentials.tokenFile: the file named on line 1 is larger than 64 KiB: it must hold the token alone"},
		{name: "endless", file: "credentials: {tokenFile: /dev/zero}", wantErr: "credentials.tokenFile: cannot read the file named on line 1: not a regular file"},
		{name: "a directory", file: "credentials: {tokenFile: " + dir + "}", wantErr: "credentials.tokenFile: cannot read the file named on line 1: not a regular file"},
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
				assert.NotContains(t, err.Error(), dir, "no file name is quoted")
				if strings.Contains(tt.name, "missing") {
					assert.ErrorIs(t, err, fs.ErrNotExist)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg.Credentials.Token.Reveal())
			require.NoError(t, cfg.Validate(), "a resolved credential is valid")
		})
	}
}

// TestSecretNeverPrints checks every way a credential reaches ccmkit, well or badly
// written, for a trace of it in what an operator sees: the error the cloud-controller-
// manager logs at start (Factory's), and the Config printed with any verb. The secret is
// checked in parts, since a tag or a bad split would show part of it.
func TestSecretNeverPrints(t *testing.T) {
	const secret = "hunter2-s3cr3t"
	parts := []string{"hunter2", "s3cr3t", fmt.Sprintf("%x", secret)}
	noSecret := func(t *testing.T, what, out string) {
		t.Helper()
		for _, p := range parts {
			assert.NotContains(t, out, p, what)
		}
	}

	t.Run("formatting", func(t *testing.T) {
		cfg, err := ReadConfig(strings.NewReader("cluster: {id: a}\ncredentials: {token: "+secret+"}\n"), "ccmkit")
		require.NoError(t, err)
		require.Equal(t, secret, cfg.Credentials.Token.Reveal())
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%10s"} {
			noSecret(t, verb, fmt.Sprintf(verb, cfg))
			noSecret(t, verb, fmt.Sprintf(verb, *cfg))
			noSecret(t, verb, fmt.Sprintf(verb, cfg.Credentials.Token))
		}
		assert.Contains(t, fmt.Sprintf("%+v", cfg.Credentials), "[redacted]")
		wrapped := fmt.Errorf("building client with %v: %w", cfg.Credentials, errors.New("boom"))
		noSecret(t, "wrapped", wrapped.Error())
		y, err := cfg.Credentials.Token.MarshalYAML()
		require.NoError(t, err)
		assert.Equal(t, "[redacted]", y)
		j, err := cfg.Credentials.Token.MarshalJSON()
		require.NoError(t, err)
		assert.JSONEq(t, `"[redacted]"`, string(j))
		assert.Empty(t, Secret("").String(), "an empty secret shows as empty, so a missing credential is visible")
	})

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(secret+"\n"), 0o600))
	// Each file starts with "cluster: {id: a}\n"; the credentials are on line 2. TOKEN
	// stands for the secret. wantErr "" means the config is accepted with the secret as token.
	tests := []struct {
		name    string
		file    string
		raw     bool // file is the whole file, without the cluster line
		env     map[string]string
		wantErr string
	}{
		{name: "token", file: "credentials: {token: TOKEN}"},
		{name: "token quoted", file: "credentials:\n  token: 'TOKEN'"},
		{name: "token tagged !!str", file: "credentials: {token: !!str TOKEN}"},
		{name: "token file", file: "credentials: {tokenFile: " + tokenFile + "}"},
		{name: "token from the environment", file: "", env: map[string]string{"CCMKIT_CLOUD_TOKEN": secret}},
		{name: "token file from the environment", file: "", env: map[string]string{"CCMKIT_CLOUD_TOKEN_FILE": tokenFile}},

		{name: "a single value instead of a mapping", file: "credentials: TOKEN",
			wantErr: "line 2 column 14: credentials must be a mapping with the key token or tokenFile, not a single value (the value is not shown: it may be the credential)"},
		{name: "a block of text instead of a mapping", file: "credentials: |\n  TOKEN\n", wantErr: "line 2 column 14: credentials must be a mapping"},
		{name: "a list instead of a mapping", file: "credentials: [TOKEN]", wantErr: "line 2 column 14: credentials must be a mapping with the key token or tokenFile, not a list"},
		{name: "token a list", file: "credentials: {token: [TOKEN]}", wantErr: "line 2 column 22: credentials.token must be a single value, not a list"},
		{name: "token a mapping", file: "credentials: {token: {TOKEN: x}}", wantErr: "line 2 column 22: credentials.token must be a single value, not a mapping"},
		{name: "tokenFile a mapping", file: "credentials:\n  tokenFile:\n    TOKEN: x", wantErr: "line 4 column 5: credentials.tokenFile must be a single value, not a mapping"},
		{name: "the token as a key", file: "credentials: {TOKEN}",
			wantErr: "line 2 column 15: unknown key in credentials (known keys: token, tokenFile; the key is not shown: it may be the credential)"},
		{name: "the token as a key of a block", file: "credentials:\n  TOKEN:\n", wantErr: "line 3 column 3: unknown key in credentials"},
		{name: "a misspelt key", file: "credentials: {tokenfile: TOKEN}", wantErr: `unknown key in credentials (known keys: token, tokenFile; the key is not shown: it may be the credential); did you mean "tokenFile"?`},
		{name: "token twice", file: "credentials: {token: a, token: TOKEN}", wantErr: "line 2 column 25: credentials.token is set twice"},
		{name: "credentials twice", file: "credentials: {token: TOKEN}\ncredentials: {token: TOKEN}", wantErr: `line 3: key "credentials" appears twice`},
		{name: "anchor on the token, aliased into a typed key", file: "credentials: {token: &t TOKEN}\ncloudAPI: {burst: *t}",
			wantErr: "line 2 column 22: credentials: YAML anchors (&name) are not allowed in the credentials: the credential must appear nowhere else in the file"},
		{name: "anchor on the section, aliased into a string", file: "credentials: &c {token: TOKEN}\nnodes: {additionalLabels: *c}", wantErr: "line 2 column 14: credentials: YAML anchors"},
		{name: "anchor named like the token", file: "credentials: {token: &TOKEN x}", wantErr: "credentials: YAML anchors (&name) are not allowed"},
		{name: "alias in the credentials", file: "region: &r TOKEN\ncredentials: {token: *r}", wantErr: "line 3 column 22: credentials: YAML aliases (*name) are not allowed in the credentials"},
		{name: "alias of no anchor", file: "credentials: {token: *TOKEN}", wantErr: `an alias ("*name") names no anchor ("&name") before it; quote a value that starts with "*"`},
		{name: "the whole file anchored", raw: true, file: "&all\ncluster: {id: a}\ncredentials: {token: TOKEN}\nnodes: {additionalLabels: *all}",
			wantErr: "line 1 column 1: the top-level mapping holds the credentials and must not carry a YAML anchor (&name)"},
		{name: "a tag that eats the first word", file: "credentials: {token: !hunter2 s3cr3t}", wantErr: "line 2 column 22: unknown YAML tag"},
		{name: "a tag in front of the token", file: "credentials:\n  token: !Secret TOKEN", wantErr: "line 3 column 10: unknown YAML tag"},
		{name: "a tag on the section", file: "credentials: !TOKEN {token: x}", wantErr: "line 2 column 14: unknown YAML tag"},
		{name: "!!binary that is not base64", file: "credentials: {token: !!binary TOKEN}", wantErr: "line 2 column 22: credentials.token is tagged !!binary but is not valid base64"},
		{name: "the token typed into tokenFile", file: "credentials:\n  tokenFile: TOKEN",
			wantErr: "cloud config: credentials.tokenFile: cannot read the file named on line 3: no such file or directory"},
		{name: "the token typed into the token file variable", file: "", env: map[string]string{"CCMKIT_CLOUD_TOKEN_FILE": secret},
			wantErr: "cloud config: $CCMKIT_CLOUD_TOKEN_FILE: cannot read the file it names: no such file or directory"},
		{name: "token and tokenFile", file: "credentials: {token: TOKEN, tokenFile: TOKEN}", wantErr: "credentials: set by credentials.token and credentials.tokenFile: set exactly one"},
		{name: "inline and the environment", file: "credentials: {token: TOKEN}", env: map[string]string{"CCMKIT_CLOUD_TOKEN": secret},
			wantErr: "credentials: set by credentials.token and $CCMKIT_CLOUD_TOKEN: set exactly one"},
		{name: "a wrong type elsewhere", file: "credentials: {token: TOKEN}\ncloudAPI: {burst: lots}", wantErr: "line 3: cannot unmarshal !!str `lots` into int"},
		{name: "a wrong type elsewhere and in the credentials", file: "credentials: [TOKEN]\ncloudAPI: {burst: lots}",
			wantErr: "line 2 column 14: credentials must be a mapping with the key token or tokenFile, not a list (the value is not shown: it may be the credential)\nyaml: unmarshal errors:\n  line 3: cannot unmarshal !!str `lots` into int"},
		{name: "a misspelt section", file: "credential: {token: TOKEN}", wantErr: `line 2: unknown key "credential" at the top level`},
		{name: "a token at the top level", file: "token: TOKEN", wantErr: `line 2: unknown key "token" at the top level`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			file := strings.ReplaceAll(tt.file, "TOKEN", secret) + "\n"
			if !tt.raw {
				file = "cluster: {id: a}\n" + file
			}
			_, err := Factory(fakeBackend(), testOptions())(strings.NewReader(file))
			if tt.wantErr == "" {
				require.NoError(t, err)
				cfg, err := ReadConfig(strings.NewReader(file), DefaultProviderName)
				require.NoError(t, err)
				assert.Equal(t, secret, cfg.Credentials.Token.Reveal())
				noSecret(t, "config", fmt.Sprintf("%+v %#v", *cfg, *cfg))
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			noSecret(t, "error", err.Error())
			noSecret(t, "error", fmt.Sprintf("%+v %#v", err, err))
		})
	}
}
