// Package fakecloud is the test to copy when you test code that takes a
// cloudprovider.Interface (a controller of your own, or an upstream one) against ccmkit's
// in-memory fake cloud: see example_test.go, and package provider/providertest for
// everything it can do. `go test ./examples/fakecloud` runs it.
package fakecloud
