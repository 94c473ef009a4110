"""Files in and out: other libraries' tokenizer files, streamed training input, atomic writes.

* ``hf_json``: Hugging Face ``tokenizer.json``;
* ``tiktoken_file``: tiktoken rank files (+ numtok's sidecar JSON);
* ``gpt2_files``: GPT-2's ``vocab.json`` + ``merges.txt``;
* ``byte_level`` / ``oniguruma``: the byte-level alphabet and the regex dialect those files use;
* ``sources``: text, jsonl and gzip input read as a stream of UTF-8 chunks;
* ``atomic``: every file numtok writes goes through ``atomic_write``, a set of files through ``atomic_directory``.

Readers return plain data (arrays, or the arguments of a :class:`numtok.Tokenizer`) and
writers take any object with a Tokenizer's attributes, so nothing here imports the encoder.
"""
