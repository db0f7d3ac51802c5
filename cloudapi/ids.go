package cloudapi

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CheckUUID refuses an ID that is not a UUID in its canonical form: 36 characters, five
// groups of 8, 4, 4, 4 and 12 lower-case hexadecimal digits joined by "-" (the IDs of
// DigitalOcean's load balancers and certificates, OpenStack's resources). Upper case is
// refused: a cloud answers its IDs in one case, and ccmkit compares IDs as strings, so an
// upper-case copy of an ID would be another ID to it (a second load balancer, another
// order). Braces, a "urn:uuid:" prefix and the 32 digits without dashes are refused too.
func CheckUUID(id string) error {
	const form = "not a UUID in lower-case canonical form (8-4-4-4-12 hexadecimal digits, such as 4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0b)"
	if len(id) != 36 {
		return errors.New(form)
	}
	for i := range len(id) {
		switch c := id[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return errors.New(form)
			}
		case (c < '0' || c > '9') && (c < 'a' || c > 'f'):
			return errors.New(form)
		}
	}
	return nil
}

// PrefixedID returns the check of an ID that is prefix followed by what rest accepts
// (a load balancer "lb-" and a UUID: PrefixedID("lb-", CheckUUID)). A nil rest accepts
// any non-empty rest. The prefix is compared exactly (its case too).
func PrefixedID(prefix string, rest func(string) error) func(id string) error {
	return func(id string) error {
		tail, ok := strings.CutPrefix(id, prefix)
		switch {
		case !ok:
			return fmt.Errorf("does not begin with %q", prefix)
		case tail == "":
			return fmt.Errorf("nothing after %q", prefix)
		case rest == nil:
			return nil
		}
		if err := rest(tail); err != nil {
			return fmt.Errorf("after %q: %w", prefix, err)
		}
		return nil
	}
}

// RefChecks check the references of a load balancer spec before any call, one check per
// kind of reference, since one cloud names its instances and its certificates with
// different kinds of ID (numbers and UUIDs, "i-" and "cert-" prefixes). A nil check
// accepts every reference of its kind. PartwiseLoadBalancers.Refs applies them; an
// adapter of its own refuses a spec with ErrInvalidRequest when Check answers an error.
type RefChecks struct {
	// Targets checks each of LoadBalancerSpec.Targets (instance IDs).
	Targets func(ref string) error
	// Certificates checks each certificate of the spec's listeners.
	Certificates func(ref string) error
}

// Check returns the references of spec that the checks refuse, each named (a target
// once, a certificate once with the first listener naming it), or nil when there are
// none.
func (r RefChecks) Check(spec LoadBalancerSpec) error {
	var errs []error
	if r.Targets != nil {
		for _, t := range slices.Compact(slices.Sorted(slices.Values(spec.Targets))) {
			if bad := r.Targets(t); bad != nil {
				errs = append(errs, fmt.Errorf("target %q: %w", t, bad))
			}
		}
	}
	if r.Certificates != nil {
		seen := map[string]bool{}
		for _, l := range spec.Listeners {
			for _, c := range l.Certificates {
				if seen[c] {
					continue
				}
				seen[c] = true
				if bad := r.Certificates(c); bad != nil {
					errs = append(errs, fmt.Errorf("certificate %q (listener %s/%d): %w", c, l.Protocol, l.Port, bad))
				}
			}
		}
	}
	return errors.Join(errs...)
}
