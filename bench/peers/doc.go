// Command peers is `make bench` with every column: ccmkit, the baseline, the peers (the
// other cloud providers' own code: package awspeer, the AWS cloud provider) and ccmkit
// over a real cloud's API (package hcloudpeer: the Hetzner adapter of examples/hcloud over
// that example's mock of the Hetzner Cloud API), each over an in-memory cloud of its own.
// It takes the flags of the bench command (bench/doc.go says what each figure measures)
// and runs the same harness (bench/harness); it is a module of its own so that the
// peers' SDKs stay out of the library's go.mod.
//
//	cd bench/peers && go run . [-json FILE] [-nodes N] [-services S] [-peers aws,ccmkit+hcloud] ...
//
// -peers runs only the named peer columns (ccmkit and the baseline always run): the AWS
// provider waits 100 ms of real time per instance lookup, so its column takes about a
// quarter of an hour at 1,000 Nodes and over an hour at 5,000, ccmkit+hcloud about a
// minute and ten. With -sweep it runs the cost curve of ccmkit and the baseline only, as
// the bench command does.
package main
