// Package scripttest holds tests of the shell scripts in hack/ that run them against a
// stub go command, so that what a script asks of go (which command, with which
// GOTOOLCHAIN) and what it reports are checked in seconds, without the builds it starts.
// It has no code besides its tests.
package scripttest
