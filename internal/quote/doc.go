// Package quote bounds what a user typed (an annotation value, a selector, a cloud
// config value) or a cloud answered when an error, an event or a log line quotes it: the
// service controller retries a failed sync, each retry logs the error and records it as an
// event, so a 10 KB annotation value would make 10 KB lines on every retry.
//
// Value quotes a value as %q does, cut after MaxRunes runes and followed by how long it
// was: "abc"… (10240 bytes). Text cuts a message that may hold such values (an upstream
// parser's error, a list of annotation keys) or a log line's value (which the logger
// quotes itself) after MaxTextRunes runes the same way, without quotes. Every place that
// quotes such a value uses them.
package quote
