// Package apivalid checks a value the cloud answers against what the API server accepts
// in the field ccmkit writes it to, so that a bad value is reported where it is read (an
// error, an event) rather than as a status patch that the API server refuses on every
// sync.
package apivalid

import (
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// IP returns nil when s is an IP address that the API server accepts in an IP field of a
// status (a Service's status.loadBalancer.ingress[].ip, a Node's InternalIP or ExternalIP
// address), else an error saying what is wrong. It checks as the API server's Service
// status validation does (validation.IsValidIPForLegacyField) in its strict mode
// (the StrictIPCIDRValidation feature gate), so that a value it accepts is accepted
// whichever mode the cluster runs: not empty, no zone ("fe80::1%eth0"), no leading zeros
// in IPv4 ("010.0.0.1"), not an IPv4-mapped IPv6 address ("::ffff:10.0.0.1"). The error
// does not quote s.
func IP(s string) error {
	errs := validation.IsValidIPForLegacyField(field.NewPath("ip"), s, true, nil)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Detail
	}
	return errors.New(strings.Join(msgs, "; "))
}
