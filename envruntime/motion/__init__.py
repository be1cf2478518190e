"""The G1 reference motion: model names, the clip format and its deterministic generator."""

from envruntime.motion.clip import MotionClip, load_clip, load_g1_motion

__all__ = ["MotionClip", "load_clip", "load_g1_motion"]
