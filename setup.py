"""Maps the top-level data folders into the wheel (see judge/resources.py for how they are found)."""

from setuptools import find_packages, setup

DATA_FOLDERS = {"judge._rubrics": "rubrics", "judge._prompts": "prompts", "judge._reports": "reports"}

setup(
    packages=find_packages(include=["judge", "judge.*"]) + list(DATA_FOLDERS),
    package_dir={name: folder for name, folder in DATA_FOLDERS.items()},
    package_data={name: ["*", "**/*"] for name in DATA_FOLDERS},
)
