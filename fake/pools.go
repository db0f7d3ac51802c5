package fake

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// errPoolExhausted is the cause of a conflict when a pool has no free address left.
var errPoolExhausted = errors.New("address pool exhausted")

// pool hands out the addresses of its prefixes in order, with a cursor that only moves
// forward: an address released by a deleted load balancer is handed out again only after
// every other address of the pool has been, like a cloud that avoids reusing addresses
// that DNS or firewall rules may still name.
type pool struct {
	prefixes []netip.Prefix
	idx      int        // prefix of the cursor
	last     netip.Addr // last address handed out from prefixes[idx]; invalid before the first
}

func newPool(cidrs []string) (*pool, error) {
	p := &pool{}
	for _, s := range cidrs {
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("address pool %q: %w", s, err)
		}
		p.prefixes = append(p.prefixes, pfx.Masked())
	}
	return p, nil
}

// contains reports whether a is a usable address of the pool.
func (p *pool) contains(a netip.Addr) bool {
	for _, pfx := range p.prefixes {
		if pfx.Contains(a) && usable(pfx, a) {
			return true
		}
	}
	return false
}

// allocate returns the next usable address after the cursor that inUse does not hold,
// wrapping around once. It fails with errPoolExhausted when every address is in use.
func (p *pool) allocate(inUse func(netip.Addr) bool) (netip.Addr, error) {
	var total uint64
	for _, pfx := range p.prefixes {
		total += usableAddresses(pfx)
	}
	// Every address is visited at most once: a pool bigger than the addresses in use
	// finds a free one within len(in use)+1 steps.
	for range total {
		a, ok := p.step()
		if !ok {
			break
		}
		if !inUse(a) {
			return a, nil
		}
	}
	return netip.Addr{}, errPoolExhausted
}

// step moves the cursor to the next usable address, wrapping from the last prefix to the
// first. It fails only when no prefix has a usable address.
func (p *pool) step() (netip.Addr, bool) {
	for range len(p.prefixes) + 1 {
		pfx := p.prefixes[p.idx]
		var next netip.Addr
		if p.last.IsValid() {
			next = p.last.Next()
		} else {
			next = pfx.Addr()
		}
		for next.IsValid() && pfx.Contains(next) && !usable(pfx, next) {
			next = next.Next()
		}
		if next.IsValid() && pfx.Contains(next) {
			p.last = next
			return next, true
		}
		p.idx = (p.idx + 1) % len(p.prefixes)
		p.last = netip.Addr{}
	}
	return netip.Addr{}, false
}

// usable reports whether a, inside pfx, may be handed out: not the network address and,
// in an IPv4 prefix shorter than /31, not the broadcast address.
func usable(pfx netip.Prefix, a netip.Addr) bool {
	if pfx.Bits() >= pfx.Addr().BitLen()-1 {
		return true // /31, /32, /127, /128: every address is a host
	}
	if a == pfx.Addr() {
		return false
	}
	if a.Is4() {
		next := a.Next()
		return next.IsValid() && pfx.Contains(next)
	}
	return true
}

// usableAddresses returns how many addresses of pfx may be handed out, saturating at 2^62.
func usableAddresses(pfx netip.Prefix) uint64 {
	host := pfx.Addr().BitLen() - pfx.Bits()
	if host >= 62 {
		return 1 << 62
	}
	n := uint64(1) << host
	switch {
	case host <= 1:
		return n
	case pfx.Addr().Is4():
		return n - 2
	default:
		return n - 1
	}
}

// familyOf returns the IP family of a.
func familyOf(a netip.Addr) cloudapi.IPFamily {
	if a.Is4() || a.Is4In6() {
		return cloudapi.IPv4
	}
	return cloudapi.IPv6
}
