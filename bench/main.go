package main

import "github.com/ccmkit/ccmkit/bench/harness"

func main() { harness.Main() }
