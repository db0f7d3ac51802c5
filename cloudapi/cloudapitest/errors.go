package cloudapitest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

func (s *suite) testErrors(t *testing.T) {
	t.Run("not found is classified as not found", func(t *testing.T) {
		client := s.backend(t, s.makeInstances(2))
		check := func(what string, err error) {
			t.Helper()
			require.ErrorIsf(t, err, cloudapi.ErrNotFound, "%s of an unknown ID: want an error matching cloudapi.ErrNotFound", what)
			assert.Truef(t, cloudapi.ClassOf(err) == cloudapi.ErrNotFound, //nolint:errorlint // ClassOf returns the sentinel itself
				"%s of an unknown ID: broke \"ClassOf returns the sentinel of this package that err matches\": got %v for %q", what, cloudapi.ClassOf(err), err)
			assert.Truef(t, cloudapi.IsNotFound(err), "%s of an unknown ID: cloudapi.IsNotFound is false for %q", what, err)
			assert.NotEmptyf(t, err.Error(), "%s of an unknown ID: the error has no message", what)
		}
		_, err := client.Instances().GetInstance(t.Context(), s.unknownInstanceID())
		check("GetInstance", err)
		if lbs, ok := client.LoadBalancers(); ok {
			_, err := lbs.GetLoadBalancer(t.Context(), "lb-contract-does-not-exist")
			check("GetLoadBalancer", err)
			spec := s.lbSpec("ct-errors")
			_, err = lbs.UpdateLoadBalancer(t.Context(), "lb-contract-does-not-exist",
				cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(cloudapi.LoadBalancerSpec{}, spec)})
			check("UpdateLoadBalancer", err)
			check("DeleteLoadBalancer", lbs.DeleteLoadBalancer(t.Context(), "lb-contract-does-not-exist"))
		}
		if routes, ok := client.Routes(); ok {
			check("DeleteRoute", routes.DeleteRoute(t.Context(), "route-contract-does-not-exist"))
		}
	})
}
