"""Helpers of the browser tests: the JupyterLab server handle and a tiny run folder with synthesized audio."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

SR = 16000
"""Sample rate of the synthesized audio."""
TIMEOUT_MS = 60_000
"""Longest wait for one thing in the page (a kernel start and the kit's imports on a busy 2-core machine)."""


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bound, read, released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Lab:
    """A running JupyterLab server: its root folder, URL and token, and helpers to drive a page."""

    def __init__(self, root: Path, port: int, token: str, log: Path) -> None:
        self.root = root
        """The server's root folder (notebooks go here)."""
        self.base = f"http://127.0.0.1:{port}"
        """Base URL."""
        self.token = token
        """The random token."""
        self.log = log
        """The server's log file."""

    def api(self, path: str, method: str = "GET") -> Any:
        """Call the server's REST API; returns the decoded JSON (None for an empty body)."""
        request = urllib.request.Request(
            f"{self.base}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def open(self, page: Any, notebook: str) -> None:
        """Open a notebook of the root folder and wait until its kernel is ready."""
        # ?reset: a fresh workspace, so that notebooks opened by an earlier test are not restored beside this one
        page.goto(f"{self.base}/lab/tree/{notebook}?reset&token={self.token}")
        self.wait_for_notebook(page, notebook)
        page.evaluate("() => window.jupyterapp.shell.collapseLeft()")

    def wait_for_notebook(self, page: Any, notebook: str) -> None:
        """Wait until ``notebook`` is the current widget and its kernel is ready."""
        page.wait_for_function(
            """(name) => {
                const panel = window.jupyterapp?.shell?.currentWidget;
                return panel?.context?.path === name && panel.sessionContext !== undefined;
            }""",
            arg=notebook,
            timeout=TIMEOUT_MS,
        )
        self.kernel_ready(page)

    def kernel_ready(self, page: Any) -> str:
        """Wait for the current notebook's kernel; returns its name."""
        return page.evaluate(
            """async () => {
                const panel = window.jupyterapp.shell.currentWidget;
                await panel.context.ready;
                await panel.sessionContext.ready;
                return panel.sessionContext.session.kernel.name;
            }"""
        )

    def run_all(self, page: Any) -> None:
        """Run every cell of the current notebook (not awaited: widgets appear as the cells run)."""
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    def wait_idle(self, page: Any) -> None:
        """Wait until every cell of the current notebook has run (no ``[*]`` prompt, kernel idle)."""
        page.wait_for_function(
            """() => {
                const panel = window.jupyterapp.shell.currentWidget;
                const kernel = panel.sessionContext.session?.kernel;
                const busy = [...document.querySelectorAll('.jp-InputArea-prompt')]
                    .some(p => p.textContent.includes('*'));
                return kernel && kernel.status === 'idle' && !busy;
            }""",
            timeout=TIMEOUT_MS,
        )

    def errors(self, page: Any) -> list[str]:
        """Texts of the error outputs shown in the current notebook."""
        return page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()

    def restart_kernel(self, notebook: str) -> None:
        """Restart the kernel of a notebook's session through the REST API (its Python state is lost)."""
        for session in self.api("/api/sessions"):
            if session["path"].endswith(notebook):
                self.api(f"/api/kernels/{session['kernel']['id']}/restart", method="POST")


def _tone(freq: float, seconds: float, amp: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (amp * np.sin(2 * np.pi * freq * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def write_tiny_run(folder: Path) -> Path:
    """A run folder with synthesized audio: 2 Foundation items, 1 mixed Chat item, one model's answers."""
    from airbench_nb.manifests import write_manifest, write_records
    from airbench_nb.mix import mix_files
    from airbench_nb.records import ChatItem, FoundationItem, Response
    from airbench_nb.runner import model_slug

    data = folder / "data"
    (data / "audio").mkdir(parents=True)
    sf.write(str(data / "audio" / "low.wav"), _tone(196, 1.2), SR)
    sf.write(str(data / "audio" / "high.wav"), _tone(880, 1.0), SR)
    noise = (0.05 * np.random.default_rng(0).standard_normal(int(1.5 * SR))).astype(np.float32)
    sf.write(str(data / "audio" / "noise.wav"), noise, SR)
    mixed = mix_files(
        "audio/low.wav", "audio/noise.wav", root=data, out=data / "audio" / "mix.wav", snr_db=5.0, offset_s=0.3
    )
    foundation = [
        FoundationItem(
            uid="pitch-1",
            dataset="synthetic",
            audio="audio/low.wav",
            task="Music_Midi_Pitch_Analysis",
            question="What is the pitch of the note?",
            choices=["C3", "G3", "E4", "A4"],
            answer=1,
        ),
        FoundationItem(
            uid="pitch-2",
            dataset="synthetic",
            audio="audio/high.wav",
            task="Music_Midi_Pitch_Analysis",
            question="Which note is played?",
            choices=["A5", "D4", "A4", "F3"],
            answer=2,
        ),
    ]
    chat = [
        ChatItem(
            uid="mix-1",
            dataset="synthetic",
            audio="audio/mix.wav",
            task="speech_and_sound_QA",
            question="What do you hear first, and what is louder?",
            reference="A low tone starts first; the tone is louder than the noise.",
            meta_info="a 196 Hz tone, then white noise 0.3 s later, 5 dB below the tone",
            mix=mixed.meta,
        )
    ]
    write_manifest(data / "foundation.jsonl", foundation)
    write_manifest(data / "chat.jsonl", chat)
    (data / "dataset.json").write_text(json.dumps({"data_root": ".", "source": "browser-test"}))
    model = "demo:tiny"
    answers = folder / "responses" / model_slug(model)
    write_records(
        answers / "foundation.jsonl",
        [
            Response(uid="pitch-1", model=model, text="The note is G3, so the answer is B."),
            Response(uid="pitch-2", model=model, text="I hear a high note, probably E4 or A4."),
        ],
    )
    write_records(answers / "chat.jsonl", [Response(uid="mix-1", model=model, text="Noise, then a beep.")])
    return folder


SPOKEN_TEXTS: dict[str, str] = {
    "tts-1": "Seven hundred and twelve.",
    "tts-2": "Please call Stella at nine.",
    "tts-3": "Is the train to Berlin late?",
}
"""The ``tts`` items of :func:`write_spoken_run`: uid and the text to speak."""
SPOKEN_QUESTION = ("ask-1", "What is two plus three?", "five")
"""The ``spoken_answer`` item of :func:`write_spoken_run`: uid, question, accepted answer."""
SPEAKERS: dict[str, str] = {"tts:espeak-ng:en-us": "en-us", "tts:espeak-ng:en-us+f3": "en-us+f3"}
"""The systems of :func:`write_spoken_run`: model spec and espeak-ng voice."""


def _speak(text: str, voice: str, path: Path) -> tuple[int, float]:
    """Speak ``text`` with espeak-ng into ``path`` (wav); returns the sample rate and the duration."""
    import subprocess

    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True, capture_output=True)
    info = sf.info(str(path))
    return int(info.samplerate), float(info.duration)


def write_spoken_run(folder: Path) -> Path:
    """A run folder with spoken answers: two espeak-ng "systems" speak 3 texts and answer 1 question aloud.

    Files go where :class:`~airbench_nb.run_folder.RunFolder` says; a text-only model answers too (it has no audio
    and is not a system of the listening test), and the second system's answer to ``ask-1`` names a file that is
    missing (left out, counted). Every other answer is a real espeak-ng wav with its SHA-256.
    """
    import hashlib

    from airbench_nb.manifests import write_manifest, write_records
    from airbench_nb.records import Response, ResponseAudio, SpeechGenerationItem
    from airbench_nb.run_folder import RunFolder

    run = RunFolder(folder)
    data = run.data_dir
    (data / "audio").mkdir(parents=True)
    sf.write(str(data / "audio" / "cue.wav"), _tone(440, 0.3), SR)
    _speak(SPOKEN_QUESTION[1], "en-gb", data / "audio" / "question.wav")
    items = [
        SpeechGenerationItem(uid=uid, dataset="synthetic", audio="audio/cue.wav", task="tts", question="", text=text)
        for uid, text in SPOKEN_TEXTS.items()
    ]
    uid, question, answer = SPOKEN_QUESTION
    items.append(
        SpeechGenerationItem(
            uid=uid,
            dataset="synthetic",
            audio="audio/question.wav",
            task="spoken_answer",
            question=question,
            answers=[answer],
        )
    )
    write_manifest(run.manifest("speech_generation"), items)
    (data / "dataset.json").write_text(json.dumps({"data_root": ".", "source": "browser-test"}))
    for model, voice in SPEAKERS.items():
        responses = []
        base = run.responses_file(model, "speech_generation").parent
        for item in items:
            spoken = item.text if item.task == "tts" else f"The answer is {answer}."
            path = run.response_audio_file(model, item.uid)
            sample_rate, duration = _speak(spoken or "", voice, path)
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            if model.endswith("+f3") and item.task == "spoken_answer":
                path.unlink()  # a spoken answer whose file went missing
            audio = ResponseAudio(
                path=path.relative_to(base).as_posix(), sha256=sha, sample_rate=sample_rate, duration_s=duration
            )
            responses.append(Response(uid=item.uid, model=model, text=spoken, audio=audio))
        write_records(run.responses_file(model, "speech_generation"), responses)
    write_records(
        run.responses_file("baseline:oracle", "speech_generation"),
        [Response(uid=item.uid, model="baseline:oracle", text=item.text or answer) for item in items],
    )
    return folder
