package adapter_test

import (
	"testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapitest"
	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
)

// Behind a middlebox that passes reads to the API and answers every write itself, with a
// redirect or a 200 longer than cloudapi.MaxAnswerBytes, no write of a load balancer or a
// route succeeds, a redirect is ErrInvalidRequest naming its Location, and the API holds
// what it held: the adapter's SDK client is cloudapi.GatedClient's.
func TestNoWriteSucceedsBehindAMiddlebox(t *testing.T) {
	cloudapitest.RunMiddlebox(t, func(t testing.TB, f cloudapitest.Fixture) (string, func(string) cloudapi.Client) {
		return contractMock(t, f), func(base string) cloudapi.Client {
			return adapter.New(adapter.Config{Endpoint: base, Location: "nbg1", Network: network.Name}, "token", nil)
		}
	}, cloudapi.MaxAnswerBytes, cloudapitest.WithInstanceShape(routeShape))
}
