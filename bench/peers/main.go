package main

import (
	"github.com/ccmkit/ccmkit/bench/harness"
	"github.com/ccmkit/ccmkit/bench/peers/awspeer"
)

func main() { harness.Main(awspeer.Column()) }
