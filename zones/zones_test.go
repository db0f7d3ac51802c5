package zones

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/providerid"
)

type lookup struct {
	insts []cloudapi.Instance
	err   error
}

func (l *lookup) find(match func(cloudapi.Instance) bool) (*cloudapi.Instance, error) {
	if l.err != nil {
		return nil, l.err
	}
	for i := range l.insts {
		if match(l.insts[i]) {
			return &l.insts[i], nil
		}
	}
	return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, "", nil)
}

func (l *lookup) ByID(_ context.Context, id string) (*cloudapi.Instance, error) {
	return l.find(func(i cloudapi.Instance) bool { return i.ID == id })
}

func (l *lookup) ByName(_ context.Context, name string) (*cloudapi.Instance, error) {
	return l.find(func(i cloudapi.Instance) bool { return i.Name == name })
}

func TestZones(t *testing.T) {
	ctx := context.Background()
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	l := &lookup{insts: []cloudapi.Instance{
		{ID: "i-1", Name: "a", Zone: "eu-1a", Region: "eu-1", State: cloudapi.InstanceRunning},
		{ID: "i-2", Name: "b", Zone: "eu-1b", State: cloudapi.InstanceRunning},
		{ID: "i-3", Name: "c", Zone: "eu-1c", State: cloudapi.InstanceTerminated},
	}}
	z, err := New(l, Options{ProviderID: format, Region: "eu-default"})
	require.NoError(t, err)

	got, err := z.GetZoneByProviderID(ctx, "ccmkit://i-1")
	require.NoError(t, err)
	assert.Equal(t, cloudprovider.Zone{FailureDomain: "eu-1a", Region: "eu-1"}, got)
	got, err = z.GetZoneByNodeName(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, cloudprovider.Zone{FailureDomain: "eu-1b", Region: "eu-default"}, got)

	_, err = z.GetZoneByNodeName(ctx, "c")
	assert.Equal(t, cloudprovider.InstanceNotFound, err, "terminated")
	_, err = z.GetZoneByProviderID(ctx, "ccmkit://i-9")
	assert.Equal(t, cloudprovider.InstanceNotFound, err)
	_, err = z.GetZoneByProviderID(ctx, "other://i-1")
	require.ErrorIs(t, err, providerid.ErrMalformed)

	_, err = z.GetZone(ctx)
	assert.Equal(t, cloudprovider.NotImplemented, err, "no zone configured")
	z2, err := New(l, Options{ProviderID: format, Zone: "eu-1a", Region: "eu-1"})
	require.NoError(t, err)
	got, err = z2.GetZone(ctx)
	require.NoError(t, err)
	assert.Equal(t, cloudprovider.Zone{FailureDomain: "eu-1a", Region: "eu-1"}, got)

	l.err = cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListInstances, "", errors.New("timeout"))
	_, err = z.GetZoneByNodeName(ctx, "a")
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.NotEqual(t, cloudprovider.InstanceNotFound, err)

	_, err = New(nil, Options{})
	assert.Error(t, err)
}
