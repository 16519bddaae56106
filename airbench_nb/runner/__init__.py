"""The resumable item loop shared by model runs and judges, and the rules that keep its outputs safe.

Results are appended to a JSONL file and flushed (and fsynced) after every batch, so an interrupted run loses at
most the batches in flight. Every response records the model spec, the prompt hash, the prompt set, the decoding
settings (``generation``), its latency and token counts.

Batches. Items go to the backend in batches of its ``batch_size``, sorted by audio length. A backend that says so
(``overlaps_batches``: ``openai:`` with one endpoint, whose client bounds the requests in flight over every call) has
its next batch read and asked while one is in flight, at most two at once, written in order; any other backend gets
one batch at a time. A backend that sends wav files (``wav_passthrough``: ``openai:``) is given a clip that is already
a 16-bit PCM mono wav at its rate as the file's bytes (:attr:`~airbench_nb.models.base.Prompt.wavs`), not decoded.

Several clips and turns. Every clip of an item is loaded (one unreadable clip makes the item's error response,
naming the clip) and sent in order (see :mod:`airbench_nb.models.base`). A multi-turn item is asked turn by turn,
each prompt carrying the earlier questions and the model's own answers; its response holds every answer
(``turns``). When a later turn fails, the answers so far are kept and ``error`` names the turn
(``backend: turn 2 of 3: ...``); such an item is asked again, from its first turn, on a rerun.

Resuming. Responses are keyed by (uid, model spec, prompt hash) and the *latest* record of a uid wins, here as in the
judge loop, scoring and the analysis frames. A rerun with the same output file skips an item when its latest response
was made with the same prompt and has no error; it answers again (appending) an item whose latest response is an error
(failures heal on rerun) or was made with another prompt (another prompt set, system text or audio). The audio is
checked as it is at run time (:func:`~airbench_nb.manifests.check_audio`, cached per file by path, size, times, inode
and device, in memory and in the kit's cache folder, so that a run resumed in a new process does not hash every clip
again), not taken from the manifest: the prompt hash covers the SHA-256 of the file actually sent, so an answer to a
clip swapped since the manifest was written is stale and the item is answered again (counted in
:attr:`RunSummary.audio_changed`, with a warning); a manifest that records no hash has nothing to compare with, and its
answers are kept. Items whose audio is missing, empty or corrupt (now, whatever the manifest's ``audio_status`` says)
get an error response once and are not retried: they are a defect of the data (scoring leaves them out), not a failure
of the model. A file holding another model's responses is refused: responses are kept one model per file.

Outputs never destroy data. Before anything is written: an existing output whose first line is not a record of the
expected kind (a manifest, a wav, someone's notes) is refused and left untouched (:func:`check_output_file`); an
output that is one of the command's inputs is refused (:func:`refuse_input_as_output`); an advisory lock
(``fcntl.flock`` on ``<out>.lock``) makes a second process writing the same output refuse (:func:`output_lock`).
:func:`repair_jsonl` then drops only a final line cut short by a crash and moves any other unreadable line to
``<out>.rejected`` with a warning.

Failures. An item whose audio cannot be read gets a :class:`~airbench_nb.records.Response` with an ``error`` and
the run goes on; so does a batch whose backend raises. A fatal API error (``FatalAPIError`` of
:mod:`airbench_nb.api_client`: a rejected or missing key, a server refusing every connection) stops the run at
once: what was answered is kept, nothing more is sent, and the exception reaches the caller.

Kinds a model serves. A specialist model declares the item kinds it serves (``kinds`` of
:class:`~airbench_nb.models.base.AudioLM`: an ASR model serves ``transcription``); an item of another kind is not
asked, gets no response, and is counted by kind as not applicable (:attr:`RunSummary.not_applicable`), shown ``n/a``
in :meth:`RunSummaries.coverage_frame`: never an error, never scored. An output file is not created for a manifest
holding no item the model serves. LALMs (``hf:`` chat families, ``openai:``) serve every kind. A backend may also
refuse single items of a kind it serves (``applies(item)``, read by
:func:`~airbench_nb.models.base.not_applicable_reason`: a multilingual Whisper answers only the
Spoken_Language_Identification items of ``foundation``): those are counted the same way, by kind, and each reason is
logged once with its count.

Replicas. For a model with ``replica_stats()`` (``openai:<model>@<url1>,<url2>,...``), the summary carries what this
run did on each replica (:attr:`RunSummary.replicas`: attempts sent, succeeded, failed, requests retried elsewhere,
times marked down), and the log shows it as a table (:meth:`RunSummary.replica_text`).

Spoken answers. A model that answers with audio (``tts:``, an ``openai:`` model asked for audio) has each answer
written as a 16-bit wav where the run folder keeps it, and the response records its path, SHA-256, rate and duration
(:mod:`~airbench_nb.runner.response_audio`), never the samples. A resumed run keeps such an answer only while its file
is there with the recorded hash (:attr:`RunSummary.audio_lost` counts the others, answered again).

Samples. ``infer --samples K`` also asks every item K times at a temperature above 0, each sample seeded from the
run's seed and its index, into ``<kind>.samples.jsonl`` beside the main responses file, resumed per item and sample;
a deterministic backend is asked once (:mod:`~airbench_nb.runner.samples`).

The package: :mod:`~airbench_nb.runner.outputs` (refusals, locks, repair, appending),
:mod:`~airbench_nb.runner.response_audio` (spoken answers on disk), :mod:`~airbench_nb.runner.models` (the model
loop, its summary), :mod:`~airbench_nb.runner.samples` (sampled answers) and :mod:`~airbench_nb.runner.infer`
(``infer`` and ``infer_run_folder``, above both); the names below are its interface.
"""

from airbench_nb.runner.infer import infer, infer_run_folder
from airbench_nb.runner.models import (
    DATA_DEFECTS,
    NOT_APPLICABLE,
    REPLICA_COUNTS,
    RunSummaries,
    RunSummary,
    check_official_output,
    model_slug,
    models_failing_every_item,
    replica_counts,
    responses_run_folder,
    run_model,
)
from airbench_nb.runner.outputs import (
    FIRST_LINE_LIMIT,
    RECORD_START,
    JsonlAppender,
    OutputError,
    OutputLockedError,
    check_output_file,
    is_fatal_api_error,
    output_lock,
    read_existing,
    refuse_input_as_output,
    repair_jsonl,
    same_file,
)
from airbench_nb.runner.response_audio import audio_problem, response_audio_file, write_response_audio
from airbench_nb.runner.samples import SamplesSummary, run_samples, sample_seed, samples_file

__all__ = [
    "DATA_DEFECTS",
    "FIRST_LINE_LIMIT",
    "JsonlAppender",
    "NOT_APPLICABLE",
    "OutputError",
    "OutputLockedError",
    "RECORD_START",
    "REPLICA_COUNTS",
    "RunSummary",
    "check_official_output",
    "check_output_file",
    "infer",
    "is_fatal_api_error",
    "model_slug",
    "RunSummaries",
    "infer_run_folder",
    "models_failing_every_item",
    "output_lock",
    "read_existing",
    "refuse_input_as_output",
    "repair_jsonl",
    "replica_counts",
    "responses_run_folder",
    "run_model",
    "same_file",
    "audio_problem",
    "response_audio_file",
    "write_response_audio",
    "SamplesSummary",
    "run_samples",
    "sample_seed",
    "samples_file",
]
