package faultinject

import "github.com/ccmkit/ccmkit/cloudapi"

// The random decisions of a call are draws from numbered streams, so that the decision of
// one rule does not depend on how many rules came before it or whether latency is set.
const (
	// streamLatency is the stream of the latency sample.
	streamLatency uint64 = 0
	// streamRule0 is the stream of Rules[0]; Rules[i] uses streamRule0+i.
	streamRule0 uint64 = 1
)

// uniform returns the draw of the given stream for the k-th call of op under seed: a number
// in [0, 1) that is a pure function of its arguments. It chains the splitmix64 finalizer
// over the seed, a 64-bit FNV-1a hash of the operation's name, k and the stream.
func uniform(seed int64, op cloudapi.Operation, k, stream uint64) float64 {
	x := mix64(uint64(seed) + golden)
	x = mix64(x ^ fnv1a(string(op)))
	x = mix64(x + k*golden)
	x = mix64(x ^ (stream+1)*0xd1b54a32d192ed03)
	// The top 53 bits make a float64 in [0, 1) with every value equally likely.
	return float64(x>>11) * 0x1p-53
}

// golden is 2^64 divided by the golden ratio, the increment of splitmix64.
const golden = 0x9e3779b97f4a7c15

// mix64 is the finalizer of splitmix64: a bijection of uint64 with good avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// fnv1a returns the 64-bit FNV-1a hash of s.
func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
