// Package example has one of each kind of exported declaration that the API description
// writes; the apicheck tests read it from export data and from source and compare.
package example

import (
	"context"
	"io"
	"time"
)

// Typed, untyped and float constants.
const (
	Retries          = 3
	Name             = "example"
	Ratio            = 0.001
	Wait             = 2 * time.Second
	Mode        Kind = 1
	unexportedC      = 4
)

// ErrExample is a variable.
var ErrExample error

// Kind is a defined basic type.
type Kind int

// String is a value method.
func (k Kind) String() string { return "kind" }

// Bytes uses byte and rune, which the description writes as uint8 and int32.
func Bytes(b []byte, r rune) (int, error) { return len(b) + int(r), nil }

// Variadic has names on its parameters and results, which the description drops.
func Variadic(ctx context.Context, format string, args ...any) (n int, err error) {
	return 0, ctx.Err()
}

// Chans has every channel direction.
func Chans(a chan int, b <-chan string, c chan<- error, d chan (<-chan int)) {}

// Number is a constraint with type terms.
type Number interface {
	~int | ~int64 | float64
}

// Sum is generic.
func Sum[N Number, K comparable](m map[K]N) N {
	var s N
	for _, v := range m {
		s += v
	}
	return s
}

// Set is a generic type.
type Set[T comparable] struct {
	Items map[T]struct{}
}

// Add has a receiver with a type parameter.
func (s *Set[T]) Add(v T) {}

// Base is embedded in Config.
type Base struct {
	Version string `json:"version"`
}

// Reset is promoted to Config.
func (b *Base) Reset() {}

// Config has tags, an embedded pointer, an anonymous struct and an unexported field.
type Config struct {
	*Base
	io.Reader
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	Limits  struct {
		QPS   float64 `yaml:"qps"`
		Burst int
	} `yaml:"limits"`
	Hook    func(context.Context, *Config) error
	Buckets [4]uint8
	private int
}

// Validate is a pointer method.
func (c *Config) Validate() error { return nil }

// Duration is an alias, written as the type it stands for.
type Duration = time.Duration

// Within takes the alias.
func Within(d Duration, deadline interface{}) bool { return d > 0 }

// Store can be implemented by other packages.
type Store interface {
	io.Closer
	Get(ctx context.Context, key string) ([]byte, error)
}

// Sealed cannot: it has an unexported method.
type Sealed interface {
	Kind() Kind
	sealed()
}

// Handler is a function type.
type Handler func(ctx context.Context, in <-chan []string) (map[string][]*Config, error)
