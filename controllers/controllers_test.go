package controllers_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/names"

	"github.com/ccmkit/ccmkit/controllers"
	"github.com/ccmkit/ccmkit/lbclass"
	"github.com/ccmkit/ccmkit/sweeper"
)

// TestWith: the upstream controllers are kept as they are, the map passed in is not
// changed, and ccmkit's controllers are added under their names and identities, none of
// them an upstream controller's name.
func TestWith(t *testing.T) {
	t.Parallel()
	got := controllers.With(app.DefaultInitFuncConstructors)
	ours := map[string]string{lbclass.ControllerName: lbclass.ClientName, sweeper.ControllerName: sweeper.ClientName}
	assert.Len(t, got, len(app.DefaultInitFuncConstructors)+len(ours))
	for name, ctor := range app.DefaultInitFuncConstructors {
		assert.Equal(t, ctor.InitContext, got[name].InitContext, "%s is kept", name)
	}
	for name, client := range ours {
		assert.NotContains(t, app.DefaultInitFuncConstructors, name, "the upstream map is not changed")
		assert.NotContains(t, names.CCMControllerAliases(), name, "no upstream controller of that name")
		require.Contains(t, got, name)
		assert.Equal(t, client, got[name].InitContext.ClientName, name)
		assert.NotNil(t, got[name].Constructor, name)
	}
	assert.Equal(t, app.DefaultInitFuncConstructors[names.ServiceLBController].InitContext.ClientName, lbclass.ClientName,
		"the class controller calls the API server as the service controller, whose RBAC deploy/ grants")
	assert.Len(t, controllers.With(nil), len(ours))
}
