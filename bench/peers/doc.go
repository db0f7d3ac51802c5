// Command peers is `make bench` with every column: ccmkit, the baseline and the peers,
// the other cloud providers' own code, each over an in-memory cloud of its own (package
// awspeer: the AWS cloud provider). It takes the flags of the bench command (bench/doc.go
// says what each figure measures) and runs the same harness (bench/harness); it is a
// module of its own so that the peers' SDKs stay out of the library's go.mod.
//
//	cd bench/peers && go run . [-json FILE] [-nodes N] [-services S] ...
//
// With -sweep it runs the cost curve of ccmkit and the baseline only, as the bench
// command does.
package main
