package main

import (
	"github.com/ccmkit/ccmkit/bench/harness"
	"github.com/ccmkit/ccmkit/bench/peers/awspeer"
	"github.com/ccmkit/ccmkit/bench/peers/hcloudpeer"
)

func main() { harness.Main(awspeer.Column(), hcloudpeer.Column()) }
