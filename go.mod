module github.com/ccmkit/ccmkit

go 1.26.8

require go.uber.org/mock v0.6.0
