"""Writes bounded_trie_cases.json: bounded-trie metric payloads as the Python
SDK encodes them per bundle, and what the SDK's own BoundedTrieData.combine
makes of them, as the oracle for the runner's merge. Regenerate with
  python3 runner/metrics/testdata/bounded_trie_cases.py > runner/metrics/testdata/bounded_trie_cases.json
"""
import json
import random

from apache_beam.metrics.cells import BoundedTrieData

rng = random.Random(7)


def sequence():
    # Few distinct segments per level, so bundles share prefixes.
    return tuple(
        rng.choice("abcd") + str(rng.randrange(3))
        for _ in range(rng.randrange(1, 4)))


cases = []
for i in range(60):
    bound = rng.choice([1, 2, 3, 5, 8, 100])
    bundles = []
    for _ in range(rng.randrange(1, 5)):
        data = BoundedTrieData(bound=bound)
        for _ in range(rng.randrange(0, 6)):
            data.add(sequence())
        bundles.append(data)
    total = BoundedTrieData(bound=bound)
    for b in bundles:
        total = total.combine(b)
    # Sequences as the SDK reports them: segments, then whether truncated.
    result = sorted([list(s[:-1]), s[-1]] for s in total.get_result())
    cases.append({
        "bound": bound,
        "payloads": [b.to_proto().SerializeToString().hex() for b in bundles],
        "added": sorted({tuple(s) for b in bundles for s, _ in
                         [(x[:-1], x[-1]) for x in b.get_result()]}),
        "size": total.size(),
        "result": result,
    })
print(json.dumps(cases, indent=1))
