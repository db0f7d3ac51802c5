// Package strictyaml decodes YAML into Go structs and refuses keys the struct does not
// have, naming each unknown key with its line, all at once. Unlike a strict yaml.Decoder,
// it works on a *yaml.Node, so a document can be decoded in parts (a common section and a
// backend's own section) with line numbers that point into the operator's file. Parse
// also refuses YAML tags other than the standard ones, and Decode a number that yaml
// would silently read as 0.
package strictyaml
