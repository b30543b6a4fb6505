package sdkenv

// Python is Beam's Python SDK: images apache/beam_python3.X_sdk.
const Python SDK = "python"

func init() { Register(Spec{Name: Python, Tag: `python(3\.\d+)`}) }
