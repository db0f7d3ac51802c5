package cloudapi

import (
	"cmp"
	"errors"
	"strconv"
	"strings"
)

// NumericID returns the number that id names, for a cloud whose IDs are positive decimal
// numbers (Hetzner's, DigitalOcean's, Linode's): ok is false for anything else (zero, a
// sign, a leading zero, white space, a number beyond int64), which names none of the
// cloud's resources. An adapter refuses such an ID before any call: as ErrInvalidRequest
// where it may name another cloud's resource (an instance ID from a provider ID), as
// ErrNotFound where only the adapter makes the IDs (a load balancer's).
func NumericID(id string) (n int64, ok bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != id {
		return 0, false
	}
	return n, true
}

// CheckNumericID refuses an ID that NumericID does not read, saying so: the check of
// PartwiseLoadBalancers.IDs and RefChecks for a cloud of numbered resources.
func CheckNumericID(id string) error {
	if _, ok := NumericID(id); !ok {
		return errors.New("not a positive decimal number: the cloud names its resources by their numeric IDs")
	}
	return nil
}

// CompareNumericIDs orders IDs as a cloud of numbered resources sorts them by ID
// (Hetzner's sort=id:asc): by their numbers (NumericID), so "9" before "10"; an ID that
// NumericID does not read sorts after every number, byte-wise among its kind. It returns
// a negative number when a sorts before b, zero when they are one ID, a positive number
// otherwise (cloudapitest.WithIDOrder).
func CompareNumericIDs(a, b string) int {
	na, oka := NumericID(a)
	nb, okb := NumericID(b)
	switch {
	case oka && okb:
		return cmp.Compare(na, nb)
	case oka != okb:
		if oka {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}
