package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

// TestTeardown runs `ccm teardown` over the built-in provider with a state file that
// another Cloud (another process, as far as the file is concerned) filled.
func TestTeardown(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "cloud.state")
	on := true
	cloud, err := fake.Open(fake.Config{StateFile: state, Instances: []fake.Instance{{ID: "i-1", Name: "n1"}}, Capabilities: fake.Capabilities{TargetGroups: &on}})
	require.NoError(t, err)
	lbs, _ := cloud.LoadBalancers()
	groups, _ := cloud.TargetGroups()
	ctx := context.Background()
	group, err := groups.CreateTargetGroup(ctx, cloudapi.TargetGroupSpec{Name: "nodes", Targets: []string{"i-1"},
		Tags: map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagTargetGroup: "all-nodes"}})
	require.NoError(t, err)
	for _, spec := range []cloudapi.LoadBalancerSpec{
		{Name: "web", TargetGroup: group.ID, Tags: map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "u1", cloudapi.TagServiceName: "ns/web"}},
		{Name: "theirs", Tags: map[string]string{cloudapi.TagCluster: "c2"}},
		{Name: "foreign"},
	} {
		_, err := lbs.CreateLoadBalancer(ctx, spec)
		require.NoError(t, err)
	}
	config := filepath.Join(dir, "cloud.yaml")
	require.NoError(t, os.WriteFile(config, []byte("backend: fake\ncluster: {id: c1}\nfake: {stateFile: "+state+", capabilities: {targetGroups: true}}\n"), 0o600))
	left := func() []string {
		var names []string
		for _, lb := range cloud.Inventory().LoadBalancers {
			names = append(names, lb.Spec.Name)
		}
		return names
	}

	var out, errOut bytes.Buffer
	code := runTeardown(ctx, []string{"--cloud-config=" + config}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), "would delete")
	assert.Contains(t, out.String(), "owner=ns/web")
	assert.Regexp(t, `would delete +target_group +`+group.ID+` +nodes +owner=all-nodes\n`, out.String())
	assert.Contains(t, out.String(), `2 resource(s) of cluster "c1" would delete`)
	assert.ElementsMatch(t, []string{"web", "theirs", "foreign"}, left(), "a dry run deletes nothing")
	assert.Len(t, cloud.Inventory().TargetGroups, 1)

	out.Reset()
	code = runTeardown(ctx, []string{"--cloud-config=" + config, "--cluster-id=c2", "--delete"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.ElementsMatch(t, []string{"web", "foreign"}, left(), "--cluster-id names the cluster")

	out.Reset()
	code = runTeardown(ctx, []string{"--cloud-config=" + config, "--delete"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Equal(t, []string{"foreign"}, left())
	assert.Empty(t, cloud.Inventory().TargetGroups, "the group goes after the load balancer that named it")

	t.Run("bad flags and configs exit non-zero", func(t *testing.T) {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, runTeardown(ctx, nil, &out, &errOut), "no cloud config")
		assert.Equal(t, 2, runTeardown(ctx, []string{"--nope"}, &out, &errOut))
		bad := filepath.Join(dir, "bad.yaml")
		require.NoError(t, os.WriteFile(bad, []byte("backend: fake\ncluster: {id: c1}\nfake: {stateFile: "+filepath.Join(dir, "corrupt")+"}\n"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "corrupt"), []byte("not a state file"), 0o600))
		errOut.Reset()
		assert.Equal(t, 1, runTeardown(ctx, []string{"--cloud-config=" + bad}, &out, &errOut))
		assert.Contains(t, errOut.String(), "corrupt")
	})
}
