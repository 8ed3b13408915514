"""A campaign, typed from its YAML file to the store and back.

- `config`: the YAML schema, validated when the file is loaded and again when the store hands
  the campaign back;
- `snapshot`: the axis and its levels as the campaign planned them;
- `planning`: the checks and the plan written into the store, each trial's setup rebuilt from
  it, the adaptive rule and the certificates a certify campaign leaves.

Nothing is imported here, so that the store can use the typed config without importing the
planning that uses the store.
"""
