package cloudapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ccmkit/ccmkit/cloudapi"
)

func TestCheckUUID(t *testing.T) {
	for _, id := range []string{"4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0b", "00000000-0000-0000-0000-000000000000"} {
		assert.NoError(t, cloudapi.CheckUUID(id), id)
	}
	for _, id := range []string{
		"", "4FD3A1C2-0B6E-4E8F-9A2D-1C3B5E7F9A0B", "4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0", "4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0bb",
		"4fd3a1c20b6e4e8f9a2d1c3b5e7f9a0b", "{4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0b}", "urn:uuid:4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0b",
		"4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0g", "4fd3a1c2_0b6e-4e8f-9a2d-1c3b5e7f9a0b", "4fd3a1c20-b6e-4e8f-9a2d-1c3b5e7f9a0b", "12345",
	} {
		assert.ErrorContains(t, cloudapi.CheckUUID(id), "not a UUID in lower-case canonical form", "%q", id)
	}
}

func TestPrefixedID(t *testing.T) {
	lb := cloudapi.PrefixedID("lb-", cloudapi.CheckUUID)
	assert.NoError(t, lb("lb-4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0b"))
	assert.EqualError(t, lb("4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0b"), `does not begin with "lb-"`)
	assert.EqualError(t, lb("LB-4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0b"), `does not begin with "lb-"`, "the prefix's case counts")
	assert.EqualError(t, lb("lb-"), `nothing after "lb-"`)
	assert.ErrorContains(t, lb("lb-12"), `after "lb-": not a UUID`)
	anyRest := cloudapi.PrefixedID("i-", nil)
	assert.NoError(t, anyRest("i-0abc"))
	assert.Error(t, anyRest("i-"))
}

// TestRefChecks: targets and certificates are checked each by the check of their kind,
// once per reference, and a nil check accepts its kind.
func TestRefChecks(t *testing.T) {
	https := func(port int32, certs ...string) cloudapi.Listener {
		return cloudapi.Listener{Protocol: cloudapi.ProtocolTCP, Port: port, TargetPort: 30443, AppProtocol: cloudapi.AppProtocolHTTPS, Certificates: certs}
	}
	const cert = "4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0b"
	refs := cloudapi.RefChecks{Targets: cloudapi.CheckNumericID, Certificates: cloudapi.CheckUUID}
	ok := cloudapi.LoadBalancerSpec{Targets: []string{"7", "12"}, Listeners: []cloudapi.Listener{https(443, cert)}}
	assert.NoError(t, refs.Check(ok), "a numeric target and a UUID certificate, each of its kind")

	swapped := cloudapi.LoadBalancerSpec{Targets: []string{cert, cert}, Listeners: []cloudapi.Listener{https(443, "7"), https(8443, "7")}}
	assert.EqualError(t, refs.Check(swapped),
		`target "`+cert+`": not a positive decimal number: the cloud names its resources by their numeric IDs`+"\n"+
			`certificate "7" (listener TCP/443): not a UUID in lower-case canonical form (8-4-4-4-12 hexadecimal digits, such as 4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0b)`)

	certsOnly := swapped.Clone()
	certsOnly.Targets = []string{"1"}
	assert.NoError(t, cloudapi.RefChecks{Targets: cloudapi.CheckNumericID}.Check(certsOnly), "no certificate check: any certificate")
	assert.NoError(t, cloudapi.RefChecks{}.Check(swapped))
}
