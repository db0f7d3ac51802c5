package provider_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	. "github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

func testOptions() Options { return Options{Metrics: metrics.NewKubeRegistry()} }

// taglessRoutes is a backend whose routes carry no tags, with instances i-1 (node-1) and
// i-2 (bastion, no Node).
func taglessRoutes(t *testing.T) *fake.Cloud {
	t.Helper()
	c, err := fake.New(fake.Config{Capabilities: fake.Capabilities{TaglessRoutes: true},
		Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}, {ID: "i-2", Name: "bastion"}}})
	require.NoError(t, err)
	return c
}

func TestRoutesClusterCIDRs(t *testing.T) {
	yes := true
	on := SweeperConfig{Enabled: true}
	cidrs := RoutesConfig{ClusterCIDRs: []string{"10.244.0.0/16"}}
	tests := []struct {
		name    string
		cfg     Config
		client  func(*testing.T) cloudapi.Client
		wantErr string
	}{
		{name: "required when routes carry no tags", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Enable: EnableConfig{Routes: &yes}},
			client:  func(t *testing.T) cloudapi.Client { return taglessRoutes(t) },
			wantErr: `routes.clusterCIDRs: required because the "ccmkit" backend's routes carry no tags`},
		{name: "not required with routes off", cfg: Config{Cluster: ClusterConfig{ID: "c1"}},
			client: func(t *testing.T) cloudapi.Client { return taglessRoutes(t) }},
		{name: "refused when routes carry tags", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Routes: cidrs, Enable: EnableConfig{Routes: &yes}},
			client: func(t *testing.T) cloudapi.Client {
				c, err := fake.New(fake.Config{})
				require.NoError(t, err)
				return c
			},
			wantErr: `routes.clusterCIDRs: set, but the "ccmkit" backend's routes carry ccmkit's tags`},
		{name: "the sweeper has nothing to sweep in routes without tags", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Routes: cidrs, Sweeper: on, Enable: EnableConfig{LoadBalancers: new(bool), Routes: &yes}},
			client:  func(t *testing.T) cloudapi.Client { return taglessRoutes(t) },
			wantErr: "sweeper.enabled: there is nothing to sweep"},
		{name: "tagless routes with their pod CIDRs", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Routes: cidrs, Enable: EnableConfig{Routes: &yes}},
			client: func(t *testing.T) cloudapi.Client { return taglessRoutes(t) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, tt.client(t), testOptions())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
		})
	}
}

// TestTaglessRoutesOwnedByPodCIDRAndNode checks the provider's part of the rule: the pod
// CIDRs from the config, the Nodes from the API server through the client Initialize
// sets up.
func TestTaglessRoutesOwnedByPodCIDRAndNode(t *testing.T) {
	backend := taglessRoutes(t)
	yes := true
	cfg := Config{Cluster: ClusterConfig{ID: "c1"}, Enable: EnableConfig{Routes: &yes}, Routes: RoutesConfig{ClusterCIDRs: []string{"10.244.0.0/16"}}}
	cloud, err := New(cfg, backend, testOptions())
	require.NoError(t, err)
	rts, ok := cloud.Routes()
	require.True(t, ok)
	api, _ := backend.Routes()
	for _, spec := range []cloudapi.RouteSpec{
		{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "i-1"}, // the cluster's
		{DestinationCIDR: "10.244.2.0/24", TargetInstanceID: "i-2"}, // to an instance that is no Node
		{DestinationCIDR: "10.99.0.0/24", TargetInstanceID: "i-1"},  // outside the pod CIDRs
	} {
		_, err := api.CreateRoute(t.Context(), spec)
		require.NoError(t, err)
	}
	uninitialized, err := New(cfg, backend, testOptions())
	require.NoError(t, err)
	early, _ := uninitialized.Routes()
	_, err = early.ListRoutes(t.Context(), "c1")
	require.ErrorContains(t, err, "no Kubernetes client to list the Nodes with: Initialize has not run", "never an empty route table")

	kube := kubefake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	stop := make(chan struct{})
	defer close(stop)
	cloud.Initialize(&providertest.ClientBuilder{Kube: kube}, stop)
	backend.ResetCalls()
	got, err := rts.ListRoutes(t.Context(), "c1")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, cloudprovider.Route{Name: got[0].Name, TargetNode: "node-1", DestinationCIDR: "10.244.1.0/24"}, *got[0])
	assert.Equal(t, fake.Calls{cloudapi.OpListRoutes: 1, cloudapi.OpListInstances: 1}, backend.Calls())
}
